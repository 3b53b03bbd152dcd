//! The tool list (§1.6, PRODUCT §3): opencode's canonical definitions, selected by flavour and by
//! the tools policy, plus the client tools that have no opencode counterpart (dropped or appended).

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::aliases::Profile;
use super::flavour::Flavour;
use crate::api::chat::ToolDef;
use crate::config::{ExtraTools, ToolsPolicy};
use crate::harness::collaboration::REQUEST_USER_INPUT;
use crate::prompts::ToolText;

/// Facts about the proxy's host that the bash description mentions.
#[derive(Debug, Clone)]
pub struct HostInfo {
    /// `$SHELL`, used for non-Linux platforms.
    pub shell: Option<String>,
    /// The process temp dir (`$TMPDIR` or `/tmp`).
    pub temp_dir: String,
}

impl HostInfo {
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            shell: env("SHELL"),
            temp_dir: std::env::temp_dir().display().to_string(),
        }
    }
}

struct Canonical {
    name: String,
    /// Ready to send, rendered for the default platform.
    rendered: Box<RawValue>,
    /// With placeholders, when the definition has any (bash), for other platforms.
    template: Option<String>,
}

pub struct Catalog {
    tools: Vec<Canonical>,
    default_platform: String,
    host: HostInfo,
}

/// What decides the tool list of one request.
#[derive(Clone, Copy)]
pub struct SelectRules<'r> {
    pub flavour: Flavour,
    pub policy: ToolsPolicy,
    pub extra: ExtraTools,
    pub profile: &'r Profile,
    pub platform: &'r str,
    /// `Some(keep)` when a collaboration mode decides `request_user_input`; else `extra` does.
    pub request_user_input: Option<bool>,
}

/// The outcome of selection for one request.
pub struct Selection<'a> {
    pub tools: Vec<Cow<'a, RawValue>>,
    /// Client tool names that were not sent, in the client's order.
    pub dropped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("opencode/tools.json: tool `{name}` does not render to JSON: {message}")]
pub struct CatalogError {
    name: String,
    message: String,
}

impl Catalog {
    pub fn new(
        texts: &[ToolText],
        default_platform: &str,
        host: HostInfo,
    ) -> Result<Self, CatalogError> {
        let mut tools = Vec::with_capacity(texts.len());
        for text in texts {
            let has_placeholders = ["{os}", "{shell}", "{temp_dir}", "{timeout_description}"]
                .iter()
                .any(|p| text.json.contains(p));
            let rendered = render(&text.json, default_platform, &host);
            let rendered = RawValue::from_string(rendered).map_err(|e| CatalogError {
                name: text.name.clone(),
                message: e.to_string(),
            })?;
            tools.push(Canonical {
                name: text.name.clone(),
                rendered,
                template: has_placeholders.then(|| text.json.clone()),
            });
        }
        Ok(Self {
            tools,
            default_platform: default_platform.to_owned(),
            host,
        })
    }

    fn definition<'a>(&'a self, tool: &'a Canonical, platform: &str) -> Cow<'a, RawValue> {
        match &tool.template {
            Some(template) if platform != self.default_platform => {
                match RawValue::from_string(render(template, platform, &self.host)) {
                    Ok(raw) => Cow::Owned(raw),
                    Err(_) => Cow::Borrowed(&tool.rendered),
                }
            }
            _ => Cow::Borrowed(&tool.rendered),
        }
    }

    fn is_canonical(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    pub fn select<'a>(
        &'a self,
        client_tools: &'a [ToolDef],
        rules: &SelectRules<'_>,
    ) -> Selection<'a> {
        let SelectRules {
            flavour,
            policy,
            extra,
            profile,
            platform,
            request_user_input,
        } = *rules;
        let mut dropped = Vec::new();
        let mut extras: Vec<Cow<'a, RawValue>> = Vec::new();
        let mut wanted: Vec<&str> = Vec::new();
        let mut client_kept: Vec<Cow<'a, RawValue>> = Vec::new();
        for def in client_tools {
            let Some(name) = def.name() else { continue };
            let opencode: Vec<&str> = profile
                .opencode_names(name)
                .into_iter()
                .filter(|o| self.is_canonical(o))
                .collect();
            if !opencode.is_empty() {
                let allowed: Vec<&str> =
                    opencode.into_iter().filter(|o| flavour.allows(o)).collect();
                if allowed.is_empty() {
                    dropped.push(name.to_owned());
                } else {
                    wanted.extend(allowed);
                    if policy == ToolsPolicy::Client {
                        client_kept.extend(to_raw(def));
                    }
                }
            } else {
                let keep = match (name, request_user_input) {
                    (REQUEST_USER_INPUT, Some(allowed)) => allowed,
                    _ => extra == ExtraTools::Append,
                };
                if keep {
                    extras.extend(to_raw(def));
                } else {
                    dropped.push(name.to_owned());
                }
            }
        }
        let mut tools: Vec<Cow<'a, RawValue>> = match policy {
            ToolsPolicy::Client => client_kept,
            ToolsPolicy::Reference | ToolsPolicy::Intersect => self
                .tools
                .iter()
                .filter(|t| flavour.allows(&t.name))
                .filter(|t| policy == ToolsPolicy::Reference || wanted.contains(&t.name.as_str()))
                .map(|t| self.definition(t, platform))
                .collect(),
        };
        tools.extend(extras);
        Selection { tools, dropped }
    }
}

fn to_raw(def: &ToolDef) -> Option<Cow<'static, RawValue>> {
    serde_json::value::to_raw_value(def).ok().map(Cow::Owned)
}

/// Fills the bash description's placeholders; values are JSON-escaped since they land in a string.
fn render(json: &str, platform: &str, host: &HostInfo) -> String {
    let linux = platform == "linux";
    let shell = if linux {
        "bash".to_owned()
    } else {
        host.shell
            .as_deref()
            .and_then(|s| std::path::Path::new(s).file_name())
            .map_or_else(|| "zsh".to_owned(), |n| n.to_string_lossy().into_owned())
    };
    let temp_dir = std::path::Path::new(&host.temp_dir)
        .join("opencode")
        .display()
        .to_string();
    let timeout = if linux {
        "120000ms"
    } else {
        "120000ms (2 minutes)"
    };
    let escape = |s: &str| {
        let quoted = serde_json::to_string(s).unwrap_or_default();
        quoted
            .get(1..quoted.len().saturating_sub(1))
            .unwrap_or_default()
            .to_owned()
    };
    json.replace("{os}", &escape(platform))
        .replace("{shell}", &escape(&shell))
        .replace("{temp_dir}", &escape(&temp_dir))
        .replace("{timeout_description}", timeout)
}
