//! The profiles this process knows (the compiled-in data files and the operator's) and how a
//! request picks one: by client, never by protocol alone.
//!
//! Owns: the table, reading a profile file's text, and detection. Must not: read files (start-up
//! hands the texts in), know a protocol.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, header};
use serde::Deserialize;
use serde_json::Value;

use super::{Alias, Conversion, Profile, ResultRule};
use crate::clients::capability::Capability;
use crate::clients::converters;
use crate::conversation::ToolDefinition;

/// The built-in profiles, one data file each: adding an agent is one file and one line here.
const BUILT_IN_FILES: [(&str, &str); 18] = [
    ("opencode.toml", include_str!("opencode.toml")),
    ("codex-responses.toml", include_str!("codex-responses.toml")),
    ("codex.toml", include_str!("codex.toml")),
    ("claude-code.toml", include_str!("claude-code.toml")),
    ("pi.toml", include_str!("pi.toml")),
    ("qwen-code.toml", include_str!("qwen-code.toml")),
    ("gemini-cli.toml", include_str!("gemini-cli.toml")),
    ("cline.toml", include_str!("cline.toml")),
    ("kilo.toml", include_str!("kilo.toml")),
    ("crush.toml", include_str!("crush.toml")),
    ("goose.toml", include_str!("goose.toml")),
    ("kimi-cli.toml", include_str!("kimi-cli.toml")),
    ("kimi-code.toml", include_str!("kimi-code.toml")),
    ("deepseek-tui.toml", include_str!("deepseek-tui.toml")),
    ("little-coder.toml", include_str!("little-coder.toml")),
    ("mini-swe-agent.toml", include_str!("mini-swe-agent.toml")),
    ("swe-agent.toml", include_str!("swe-agent.toml")),
    ("terminus-2.toml", include_str!("terminus-2.toml")),
];

/// A profile file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    #[serde(default)]
    user_agents: Vec<String>,
    #[serde(default)]
    unwrap_output_json: bool,
    #[serde(default, rename = "alias")]
    aliases: Vec<AliasFile>,
    #[serde(default)]
    apps: Vec<String>,
    #[serde(default)]
    fingerprint: Vec<String>,
    #[serde(default)]
    drop: Vec<String>,
    #[serde(default, rename = "result")]
    results: Vec<ResultRule>,
    #[serde(default)]
    subagent: crate::clients::subagent::Markers,
}

/// One alias as written: `capability` names a neutral capability (`harness` and `opencode`, the
/// names of files written before the dialect layer, name opencode's tool for it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasFile {
    client: String,
    #[serde(alias = "harness", alias = "opencode")]
    capability: Capability,
    #[serde(default)]
    converter: Option<String>,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    #[serde(default)]
    scale: BTreeMap<String, f64>,
    #[serde(default)]
    shift: BTreeMap<String, f64>,
    #[serde(default)]
    defaults: BTreeMap<String, Value>,
    #[serde(default)]
    output: Option<String>,
}

/// `x-harness-client` named no known profile.
#[derive(Debug, thiserror::Error)]
#[error("unknown client profile `{name}` in x-harness-client; known profiles: {known}")]
pub struct UnknownProfile {
    pub name: String,
    pub known: String,
}

#[derive(Clone)]
pub struct Profiles {
    profiles: Vec<Arc<Profile>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("alias profile file {path}: {message}")]
    File { path: String, message: String },
}

impl Profiles {
    /// The built-in profiles plus one per profile file, given as (path shown in errors, text); a
    /// file may replace a built-in of the same name. Reading the files is the caller's (start-up).
    pub fn load(files: &[(String, String)]) -> Result<Self, ProfileError> {
        let mut profiles: Vec<Arc<Profile>> = Vec::new();
        let built_in = BUILT_IN_FILES
            .iter()
            .map(|(path, text)| (format!("built-in {path}"), (*text).to_owned()));
        for (shown, text) in built_in.chain(files.iter().cloned()) {
            let profile = parse(&shown, &text)?;
            profiles.retain(|p| p.name != profile.name);
            profiles.push(Arc::new(profile));
        }
        Ok(Self { profiles })
    }

    /// The `opencode` profile: the opencode harness's tool set.
    pub fn opencode(&self) -> Arc<Profile> {
        self.named("opencode")
            .unwrap_or_else(|_| Arc::new(Profile::none()))
    }

    /// The profile of a harness's agent (its tool set's dialect); `none` if there is no such file,
    /// which leaves every tool of the harness meeting only a client tool of its own name.
    pub fn dialect(&self, name: &str) -> Arc<Profile> {
        self.named(name)
            .unwrap_or_else(|_| Arc::new(Profile::none()))
    }

    /// One built-in profile by name (tests, benches).
    pub fn built_in(name: &str) -> Arc<Profile> {
        Self::load(&[])
            .ok()
            .and_then(|p| p.named(name).ok())
            .unwrap_or_else(|| Arc::new(Profile::none()))
    }

    /// Every tool name a profile names: its aliases' client tools and capabilities, the tools it
    /// drops, its fingerprint's tools (`clients::labels`).
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().flat_map(|p| {
            let aliases = p
                .aliases
                .iter()
                .flat_map(|a| [a.client.as_str(), a.capability.as_str()]);
            let fingerprint = p
                .fingerprint
                .iter()
                .map(|f| f.split_once('.').map_or(f.as_str(), |(tool, _)| tool));
            aliases
                .chain(p.drop.iter().map(String::as_str))
                .chain(fingerprint)
        })
    }

    pub fn names(&self) -> String {
        self.profiles
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The profile of that name (`x-harness-client`).
    pub fn named(&self, name: &str) -> Result<Arc<Profile>, UnknownProfile> {
        self.profiles
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or_else(|| UnknownProfile {
                name: name.to_owned(),
                known: self.names(),
            })
    }

    /// Header `x-harness-client`; else what the client's own headers told its front
    /// (`implied`: Codex's on the Responses front); else the User-Agent, then `x-app`, then the
    /// offered tool set's fingerprint; else `none` (its tools read by inference). Where several profiles share a
    /// User-Agent (Codex on Chat and on Responses), the one whose fingerprint the tools match wins,
    /// then the one with none.
    pub fn detect(
        &self,
        headers: &HeaderMap,
        implied: Option<&str>,
        offered: &[ToolDefinition],
    ) -> Result<Arc<Profile>, UnknownProfile> {
        // Names made once: a lookup by text parses the name on every request.
        static CLIENT: HeaderName = HeaderName::from_static("x-harness-client");
        static APP: HeaderName = HeaderName::from_static("x-app");
        let header = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(name) = header(&CLIENT).map(str::trim).or(implied) {
            return self.named(name);
        }
        let agent = header(&header::USER_AGENT).unwrap_or_default();
        let app = header(&APP).unwrap_or_default();
        let fits = |p: &Profile| p.fingerprint.is_empty() || matches(&p.fingerprint, offered);
        // A header names the agent; a fingerprint only tells apart profiles sharing it.
        let by = |pick: &dyn Fn(&Profile) -> bool| {
            let candidates = || self.profiles.iter().filter(|p| pick(p));
            candidates()
                .find(|p| !p.fingerprint.is_empty() && fits(p))
                .or_else(|| candidates().find(|p| p.fingerprint.is_empty()))
                .or_else(|| candidates().next())
        };
        let found = by(&|p| p.user_agents.iter().any(|u| agent.starts_with(u.as_str())))
            .or_else(|| by(&|p| !app.is_empty() && p.apps.iter().any(|a| a == app)))
            .or_else(|| {
                self.profiles
                    .iter()
                    .find(|p| !p.fingerprint.is_empty() && fits(p))
            });
        Ok(found.cloned().unwrap_or_else(|| Arc::new(Profile::none())))
    }
}

fn parse(shown: &str, text: &str) -> Result<Profile, ProfileError> {
    let error = |message: String| ProfileError::File {
        path: shown.to_owned(),
        message,
    };
    let file: ProfileFile = toml::from_str(text).map_err(|e| error(e.to_string()))?;
    let aliases = file
        .aliases
        .into_iter()
        .map(|alias| {
            let client = alias.client.clone();
            resolve(alias).map_err(|message| error(format!("alias `{client}`: {message}")))
        })
        .collect::<Result<_, _>>()?;
    if let Some(name) = file.subagent.collect.as_deref()
        && converters::collector(name).is_none()
    {
        return Err(error(format!(
            "unknown sub-agent collector `{name}`; known: codex_wait_agent"
        )));
    }
    Ok(Profile {
        name: file.name,
        user_agents: file.user_agents,
        unwrap_output_json: file.unwrap_output_json,
        aliases,
        apps: file.apps,
        fingerprint: file.fingerprint,
        drop: file.drop,
        results: file.results,
        subagent: file.subagent,
    })
}

/// An alias as written → its conversion resolved by name.
fn resolve(file: AliasFile) -> Result<Alias, String> {
    let conversion = match file.converter.as_deref() {
        None | Some("identity") => Conversion::Identity,
        Some("fields") => Conversion::Fields,
        Some("only") => Conversion::Only,
        Some(name) => Conversion::Named(converters::lookup(name).ok_or_else(|| {
            format!("unknown converter `{name}`; known: {}", converters::names())
        })?),
    };
    if matches!(conversion, Conversion::Fields | Conversion::Only) && file.fields.is_empty() {
        return Err("converter `fields` or `only` needs a `fields` table".to_owned());
    }
    let output = match file.output.as_deref() {
        None => None,
        Some(name) => Some(converters::reader(name).ok_or_else(|| {
            format!(
                "unknown output reader `{name}`; known: {}",
                converters::reader_names()
            )
        })?),
    };
    Ok(Alias {
        client: file.client,
        capability: file.capability,
        conversion,
        fields: file.fields,
        scale: file.scale,
        shift: file.shift,
        defaults: file.defaults,
        output,
    })
}

/// Every fingerprint entry, `tool` or `tool.parameter`, is offered.
fn matches(fingerprint: &[String], offered: &[ToolDefinition]) -> bool {
    fingerprint.iter().all(|entry| {
        let (tool, parameter) = entry
            .split_once('.')
            .map_or((entry.as_str(), None), |(t, p)| (t, Some(p)));
        offered.iter().any(|def| {
            def.name() == Some(tool)
                && parameter.is_none_or(|p| match def {
                    ToolDefinition::Function(f) => f
                        .parameters
                        .as_ref()
                        .and_then(|s| s.pointer(&format!("/properties/{p}")))
                        .is_some(),
                    ToolDefinition::Freeform(_) | ToolDefinition::Other { .. } => false,
                })
        })
    })
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
