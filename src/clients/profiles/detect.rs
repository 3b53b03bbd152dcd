//! The profiles this process knows (built in, compiled-in data files, the operator's files) and
//! how a request picks one: by client, never by protocol alone.
//!
//! Owns: the table and detection. Must not: read files (start-up hands the texts in), know a
//! protocol.

use std::sync::Arc;

use http::{HeaderMap, header};

use super::{Converter, Profile};
use crate::conversation::ToolDefinition;

/// The data files of the built-in profiles whose converters are renames or named converters.
const BUILT_IN_FILES: [(&str, &str); 8] = [
    ("pi.toml", include_str!("pi.toml")),
    ("qwen-code.toml", include_str!("qwen-code.toml")),
    ("gemini-cli.toml", include_str!("gemini-cli.toml")),
    ("cline.toml", include_str!("cline.toml")),
    ("kilo.toml", include_str!("kilo.toml")),
    ("crush.toml", include_str!("crush.toml")),
    ("goose.toml", include_str!("goose.toml")),
    ("kimi-code.toml", include_str!("kimi-code.toml")),
];

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
        let mut profiles = vec![
            Arc::new(Profile::identity()),
            Arc::new(Profile::codex_responses()),
            Arc::new(Profile::codex()),
            Arc::new(Profile::claude_code()),
        ];
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

    /// Every tool name a profile names: its aliases' client and harness tools, the tools it
    /// drops, its fingerprint's tools (`clients::labels`).
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().flat_map(|p| {
            let aliases = p
                .aliases
                .iter()
                .flat_map(|a| [a.client.as_str(), a.opencode.as_str()]);
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
    /// offered tool set's fingerprint; else the identity profile. Where several profiles share a
    /// User-Agent (Codex on Chat and on Responses), the one whose fingerprint the tools match wins,
    /// then the one with none.
    pub fn detect(
        &self,
        headers: &HeaderMap,
        implied: Option<&str>,
        offered: &[ToolDefinition],
    ) -> Result<Arc<Profile>, UnknownProfile> {
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(name) = header("x-harness-client").map(str::trim).or(implied) {
            return self.named(name);
        }
        let agent = header(header::USER_AGENT.as_str()).unwrap_or_default();
        let app = header("x-app").unwrap_or_default();
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
        Ok(found
            .or_else(|| self.profiles.first())
            .cloned()
            .unwrap_or_else(|| Arc::new(Profile::identity())))
    }
}

fn parse(shown: &str, text: &str) -> Result<Profile, ProfileError> {
    let error = |message: String| ProfileError::File {
        path: shown.to_owned(),
        message,
    };
    let profile: Profile = toml::from_str(text).map_err(|e| error(e.to_string()))?;
    if let Some(alias) = profile
        .aliases
        .iter()
        .find(|a| matches!(a.converter, Converter::Fields | Converter::Only) && a.fields.is_empty())
    {
        return Err(error(format!(
            "alias `{}`: converter `fields` needs a `fields` table",
            alias.client
        )));
    }
    Ok(profile)
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
