//! Layering: defaults (each struct's `Default`, through `#[serde(default)]`) < TOML file < env
//! `HARNESS_PROXY__SECTION__KEY` < CLI flags, merged by `figment`; its typed errors (the key's
//! path and what was wrong) name the offending key and where it came from.
//!
//! Owns: reading the file, turning the env map and the flags into layers, naming errors. Must
//! not: read the process environment (callers pass it in, so tests never mutate global state).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::error::Kind;
use figment::providers::{Format, Serialized, Toml};

use super::{Config, ConfigError, ENV_PREFIX, validate};

/// Values given on the command line; `None` leaves the lower layers in charge.
#[derive(Debug, Clone, Default)]
pub struct FlagOverrides {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub default_harness: Option<String>,
    pub log_format: Option<String>,
    pub prompts_dir: Option<PathBuf>,
}

/// Where a layered value came from, for error messages.
#[derive(Debug, Clone)]
enum Origin {
    File(PathBuf),
    Env(String),
    Flag(&'static str),
}

/// A layer's key path and where its value came from.
type Origins = Vec<(Vec<String>, Origin)>;

/// Builds the effective config. `env` is the process environment (or a test's map).
pub fn load(
    file: Option<&Path>,
    env: &BTreeMap<String, String>,
    flags: &FlagOverrides,
) -> Result<Config, ConfigError> {
    let mut figment = Figment::new();
    let mut origins = Origins::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        // Checked here so a syntax error names the file rather than a key.
        let table = text
            .parse::<toml::Table>()
            .map_err(|e| ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        leaf_paths(&table, &mut Vec::new(), &mut |key| {
            origins.push((key, Origin::File(path.to_owned())));
        });
        figment = figment.merge(Toml::string(&text));
    }
    let (mut env_layer, env_origins) = env_layer(env)?;
    origins.extend(env_origins);
    let (flag_layer, flag_origins) = flag_layer(flags);
    origins.extend(flag_origins);
    // An env value that looked like a number or bool may be meant as a string (a numeric model
    // name): such a key is retried as the string it was given as before an error is reported.
    loop {
        let layered = figment
            .clone()
            .merge(Serialized::globals(&env_layer))
            .merge(Serialized::globals(&flag_layer));
        match layered.extract::<Config>() {
            Ok(config) => {
                validate::validate(&config)?;
                return Ok(config);
            }
            Err(err) => {
                if matches!(err.kind, Kind::InvalidType(..))
                    && let Some(Origin::Env(name)) = origin_of(&origins, &err.path)
                    && let Some(slot) = lookup_mut(&mut env_layer, &err.path)
                    && !slot.is_str()
                {
                    *slot = toml::Value::String(env[name].clone());
                    continue;
                }
                return Err(key_error(&err, &origins));
            }
        }
    }
}

/// The `HARNESS_PROXY__…` variables as one nested table; values typed by TOML syntax.
fn env_layer(env: &BTreeMap<String, String>) -> Result<(toml::Table, Origins), ConfigError> {
    let mut tree = toml::Table::new();
    let mut origins = Origins::new();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        if path.iter().any(String::is_empty) {
            return Err(ConfigError::Key {
                key: rest.to_ascii_lowercase().replace("__", "."),
                origin: format!(" (from env {name})"),
                message: "malformed variable name".to_owned(),
            });
        }
        insert(&mut tree, &path, env_value(raw));
        origins.push((path, Origin::Env(name.clone())));
    }
    Ok((tree, origins))
}

fn flag_layer(flags: &FlagOverrides) -> (toml::Table, Origins) {
    let values: [(&'static str, &[&str], Option<String>); 5] = [
        ("--listen", &["listen"], flags.listen.clone()),
        (
            "--upstream",
            &["upstream", "base_url"],
            flags.upstream.clone(),
        ),
        (
            "--default-harness",
            &["default_harness"],
            flags.default_harness.clone(),
        ),
        ("--log-format", &["log_format"], flags.log_format.clone()),
        (
            "--prompts-dir",
            &["prompts_dir"],
            flags.prompts_dir.as_ref().map(|p| p.display().to_string()),
        ),
    ];
    let mut tree = toml::Table::new();
    let mut origins = Origins::new();
    for (flag, path, value) in values {
        if let Some(value) = value {
            let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
            insert(&mut tree, &path, toml::Value::String(value));
            origins.push((path, Origin::Flag(flag)));
        }
    }
    (tree, origins)
}

/// Env values are typed by TOML syntax (`true`, `8`, `["a"]`); anything else is a string.
fn env_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(
                v @ (toml::Value::Boolean(_) | toml::Value::Integer(_) | toml::Value::Array(_)),
            ) => v,
            _ => toml::Value::String(raw.to_owned()),
        },
        Err(_) => toml::Value::String(raw.to_owned()),
    }
}

fn insert(tree: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut table = tree;
    for key in parents {
        let entry = table
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(next) = entry else {
            return;
        };
        table = next;
    }
    table.insert(last.clone(), value);
}

fn lookup_mut<'a>(tree: &'a mut toml::Table, path: &[String]) -> Option<&'a mut toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = tree;
    for key in parents {
        table = table.get_mut(key)?.as_table_mut()?;
    }
    table.get_mut(last)
}

/// The last layer that set `path` (flags, then env, then the file).
fn origin_of<'a>(origins: &'a Origins, path: &[String]) -> Option<&'a Origin> {
    origins
        .iter()
        .rev()
        .find(|(p, _)| p.as_slice() == path)
        .map(|(_, origin)| origin)
}

/// Calls `found` with the path of every value of `table` that is not itself a table.
fn leaf_paths(table: &toml::Table, prefix: &mut Vec<String>, found: &mut dyn FnMut(Vec<String>)) {
    for (key, value) in table {
        prefix.push(key.clone());
        match value {
            toml::Value::Table(inner) => leaf_paths(inner, prefix, found),
            _ => found(prefix.clone()),
        }
        prefix.pop();
    }
}

/// The figment error as a `ConfigError::Key` naming the full key (an unknown field's own name
/// included) and the env variable or flag it came from.
fn key_error(err: &figment::Error, origins: &Origins) -> ConfigError {
    let mut path = err.path.clone();
    // An unknown field's path may end at its parent table or at the field itself.
    if let Kind::UnknownField(field, _) = &err.kind
        && path.last() != Some(field)
    {
        path.push(field.clone());
    }
    let origin = origin_of(origins, &path)
        .map(|o| match o {
            Origin::File(path) => format!(" (in {})", path.display()),
            Origin::Env(name) => format!(" (from env {name})"),
            Origin::Flag(flag) => format!(" (from {flag})"),
        })
        .unwrap_or_default();
    let key = if path.is_empty() {
        ".".to_owned()
    } else {
        path.join(".")
    };
    ConfigError::Key {
        key,
        origin,
        message: err.kind.to_string(),
    }
}
