//! Docs that cannot drift: `docs/configuration.md` lists every key of the real config with its
//! default and env name (a key added to `Config` without a row fails here, naming the row to add),
//! and the README, ARCHITECTURE.md and docs/ link nothing outside the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use harness_proxy::config::{Config, ENV_PREFIX};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every leaf key of the config as `section.key` → its default as the docs write it.
fn config_keys() -> BTreeMap<String, String> {
    fn walk(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(&path, value, out);
                }
            }
            Value::Null => {
                out.insert(prefix.to_owned(), "unset".to_owned());
            }
            Value::String(text) => {
                out.insert(prefix.to_owned(), text.clone());
            }
            other => {
                out.insert(prefix.to_owned(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    let value = serde_json::to_value(Config::default()).expect("the config serializes");
    walk("", &value, &mut out);
    out
}

fn env_name(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.to_ascii_uppercase().replace('.', "__")
    )
}

/// The rows of a reference's tables: key → (default, env), each cell without its backticks.
fn documented(text: &str) -> BTreeMap<String, (String, String)> {
    text.lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .split(" | ")
                .map(|c| c.trim_matches(['|', ' ']))
                .collect();
            let unquote = |cell: &str| cell.trim_matches('`').to_owned();
            Some((
                unquote(cells.first()?),
                (unquote(cells.get(1)?), unquote(cells.get(2)?)),
            ))
        })
        .collect()
}

/// What a reference text gets wrong about the config, one line each.
fn problems(reference: &str) -> Vec<String> {
    let keys = config_keys();
    let docs = documented(reference);
    let mut problems = Vec::new();
    for (key, default) in &keys {
        let env = env_name(key);
        match docs.get(key) {
            None => problems.push(format!(
                "missing key `{key}`: add the row | `{key}` | `{default}` | `{env}` | … |"
            )),
            Some((doc_default, doc_env)) => {
                if doc_default != default {
                    problems.push(format!(
                        "`{key}`: documented default `{doc_default}`, the real one is `{default}`"
                    ));
                }
                if *doc_env != env {
                    problems.push(format!("`{key}`: env name is `{env}`, not `{doc_env}`"));
                }
            }
        }
    }
    for key in docs.keys().filter(|k| !keys.contains_key(*k)) {
        problems.push(format!(
            "`{key}` is documented but the config has no such key"
        ));
    }
    problems
}

fn reference() -> String {
    std::fs::read_to_string(repo().join("docs/configuration.md"))
        .expect("docs/configuration.md exists")
}

#[test]
fn every_config_key_is_documented_with_its_default_and_env_name() {
    let problems = problems(&reference());
    assert!(
        problems.is_empty(),
        "docs/configuration.md is out of date:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_key_without_a_row_or_with_a_wrong_default_is_named() {
    let text = reference();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("| `upstream.pool_max_idle_per_host`"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        problems(&without),
        [
            "missing key `upstream.pool_max_idle_per_host`: add the row | `upstream.pool_max_idle_per_host` | `64` | `HARNESS_PROXY__UPSTREAM__POOL_MAX_IDLE_PER_HOST` | … |"
        ]
    );
    let wrong = text.replace(
        "| `titles.max_chars` | `50` |",
        "| `titles.max_chars` | `60` |",
    );
    assert_eq!(
        problems(&wrong),
        ["`titles.max_chars`: documented default `60`, the real one is `50`"]
    );
    let stale =
        format!("{text}| `titles.colour` | `red` | `HARNESS_PROXY__TITLES__COLOUR` | x |\n");
    assert_eq!(
        problems(&stale),
        ["`titles.colour` is documented but the config has no such key"]
    );
}

/// Relative link targets of a markdown text: `](target)`, anchors and web links aside.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.split('#').next().unwrap_or_default().to_owned())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

#[test]
fn the_docs_link_nothing_outside_the_repository() {
    let root = repo().canonicalize().expect("repo");
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        assert!(
            !text.contains("../shared") && !text.contains("shared/spec"),
            "{} refers to files outside the repository",
            file.display()
        );
        let dir = file.parent().unwrap_or(Path::new("."));
        for target in relative_links(&text) {
            let resolved = dir.join(&target).canonicalize();
            assert!(
                resolved.as_ref().is_ok_and(|p| p.starts_with(&root)),
                "{} links `{target}`, which is not a file of the repository",
                file.display()
            );
        }
    }
}
