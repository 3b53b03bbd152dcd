//! The tool list (docs/wire.md §1 "Tools"; docs/harnesses.md "The opencode harness", tool
//! policy): opencode's canonical definitions, selected by flavour and by the tools policy for the
//! client tools the request's bridge maps to them, then the client tools it keeps (their own
//! definitions, after opencode's, as opencode sends MCP tools). The catalogue is also the
//! harness's tool set the bridge pivots on (`HarnessTools`).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::flavour::Flavour;
use crate::clients::bridge::{Binding, Bridge, HarnessTools};
use crate::clients::profiles::Profile;
use crate::config::ToolsPolicy;
use crate::conversation::ToolDefinition;
use crate::harness::collaboration::REQUEST_USER_INPUT;
use crate::prompts::ToolText;
use crate::template::{BindError, Pattern, Template};

/// Facts about the proxy's host that the bash description and the `<env>` date need, resolved
/// once at start-up so the harness never reads the process's surroundings per request.
#[derive(Debug, Clone)]
pub struct HostInfo {
    /// `$SHELL`, used for non-Linux platforms.
    pub shell: Option<String>,
    /// The process temp dir (`$TMPDIR` or `/tmp`).
    pub temp_dir: String,
    /// The host's UTC offset at start-up: the date line's zone when `opencode.timezone` is unset.
    pub utc_offset: chrono::FixedOffset,
}

impl HostInfo {
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>, utc_offset: chrono::FixedOffset) -> Self {
        Self {
            utc_offset,
            shell: env("SHELL"),
            // As `std::env::temp_dir` on Unix, but from the injected environment.
            temp_dir: env("TMPDIR")
                .filter(|dir| !dir.is_empty())
                .unwrap_or_else(|| "/tmp".to_owned()),
        }
    }
}

struct Canonical {
    name: String,
    /// Ready to send, rendered for the default platform.
    rendered: Box<RawValue>,
    /// The definition and its description bound at start-up, when the description names the
    /// platform (bash): filled per request for another platform.
    per_platform: Option<(serde_json::Value, Pattern)>,
}

/// Placeholders of a tool description: the ones filled per platform, then the host's.
const PLATFORM_HOLES: [&str; 3] = ["os", "shell", "timeout_description"];
const TEMP_DIR: &str = "temp_dir";

pub struct Catalog {
    tools: Vec<Canonical>,
    /// The tools' names and argument schemas, for the bridge.
    harness_tools: Arc<HarnessTools>,
    default_platform: String,
    host: HostInfo,
}

/// What decides the tool list of one request.
#[derive(Clone, Copy)]
pub struct SelectRules<'r> {
    pub flavour: Flavour,
    pub policy: ToolsPolicy,
    pub platform: &'r str,
    /// `Some(keep)` when a collaboration mode decides `request_user_input`; else the bridge does.
    pub request_user_input: Option<bool>,
}

/// The outcome of selection for one request.
pub struct Selection<'a> {
    pub tools: Vec<Cow<'a, RawValue>>,
}

#[derive(Debug, thiserror::Error)]
#[error("opencode/tools.json: tool `{name}`: {cause}")]
pub struct CatalogError {
    name: String,
    #[source]
    cause: ToolTextError,
}

/// What is wrong with one tool's text.
#[derive(Debug, thiserror::Error)]
pub enum ToolTextError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Description(#[from] BindError),
}

impl Catalog {
    /// `dialect`: the profile that says what each of these tools does (opencode's).
    pub fn new(
        texts: &[ToolText],
        dialect: Arc<Profile>,
        default_platform: &str,
        host: HostInfo,
    ) -> Result<Self, CatalogError> {
        let mut tools = Vec::with_capacity(texts.len());
        let mut schemas = Vec::with_capacity(texts.len());
        let temp_dir = Path::new(&host.temp_dir)
            .join("opencode")
            .display()
            .to_string();
        for text in texts {
            let error = |cause: ToolTextError| CatalogError {
                name: text.name.clone(),
                cause,
            };
            let mut tool: serde_json::Value =
                serde_json::from_str(&text.json).map_err(|e| error(e.into()))?;
            let pattern = match tool.pointer("/function/description") {
                Some(serde_json::Value::String(description)) => {
                    Some(bind_description(description, &temp_dir).map_err(|e| error(e.into()))?)
                }
                _ => None,
            };
            if let Some(pattern) = &pattern
                && let Some(slot) = tool.pointer_mut("/function/description")
            {
                *slot = serde_json::Value::String(fill(pattern, default_platform, &host));
            }
            let rendered = serde_json::value::to_raw_value(&tool).map_err(|e| error(e.into()))?;
            schemas.push((
                text.name.clone(),
                tool.pointer("/function/parameters").cloned(),
            ));
            tools.push(Canonical {
                name: text.name.clone(),
                rendered,
                per_platform: pattern.filter(Pattern::has_holes).map(|p| (tool, p)),
            });
        }
        Ok(Self {
            tools,
            harness_tools: Arc::new(HarnessTools::new(dialect, schemas)),
            default_platform: default_platform.to_owned(),
            host,
        })
    }

    fn definition<'a>(&'a self, tool: &'a Canonical, platform: &str) -> Cow<'a, RawValue> {
        match &tool.per_platform {
            Some((definition, pattern)) if platform != self.default_platform => {
                let mut definition = definition.clone();
                if let Some(slot) = definition.pointer_mut("/function/description") {
                    *slot = serde_json::Value::String(fill(pattern, platform, &self.host));
                }
                serde_json::value::to_raw_value(&definition)
                    .map_or(Cow::Borrowed(&tool.rendered), Cow::Owned)
            }
            _ => Cow::Borrowed(&tool.rendered),
        }
    }

    pub fn harness_tools(&self) -> &Arc<HarnessTools> {
        &self.harness_tools
    }

    /// The upstream's tools: opencode's for what the bridge mapped (all of the flavour's with
    /// the `reference` policy), then the kept client tools. A tool the flavour or the mode has
    /// no place for is dropped from the bridge, so its calls are not routed to it.
    pub fn select<'a>(
        &'a self,
        client_tools: &'a [ToolDefinition],
        bridge: &mut Bridge,
        rules: &SelectRules<'_>,
    ) -> Selection<'a> {
        let SelectRules {
            flavour,
            policy,
            platform,
            request_user_input,
        } = *rules;
        let mut now_dropped = Vec::new();
        let mut extras: Vec<Cow<'a, RawValue>> = Vec::new();
        let mut wanted: Vec<String> = Vec::new();
        let mut client_kept: Vec<Cow<'a, RawValue>> = Vec::new();
        for def in client_tools {
            let Some(name) = def.name() else { continue };
            match (bridge.binding(name), name, request_user_input) {
                (_, REQUEST_USER_INPUT, Some(false)) => now_dropped.push(name),
                (Some(Binding::Mapped { harness, .. }), _, _) => {
                    let allowed: Vec<String> = harness
                        .iter()
                        .filter(|o| flavour.allows(o))
                        .cloned()
                        .collect();
                    if allowed.is_empty() {
                        now_dropped.push(name);
                    } else {
                        wanted.extend(allowed);
                        if policy == ToolsPolicy::Client {
                            client_kept.extend(to_raw(def));
                        }
                    }
                }
                // The search agent has its five tools and nothing else (the client's own
                // sub-agent rebuilt as it: none of its write tools), but the tool the client's
                // sub-agent must end with.
                (Some(Binding::Kept), _, _)
                    if flavour == Flavour::SearchAgent
                        && !bridge.profile.subagent.keep.iter().any(|k| k == name) =>
                {
                    now_dropped.push(name);
                }
                (Some(Binding::Kept), _, _) | (_, REQUEST_USER_INPUT, Some(true)) => {
                    match to_raw(def) {
                        Some(raw) => {
                            bridge.keep_tool(name);
                            extras.push(raw);
                        }
                        None => now_dropped.push(name),
                    }
                }
                (Some(Binding::Dropped) | None, _, _) => {}
            }
        }
        bridge.drop_tools(now_dropped);
        let kept: std::collections::HashSet<String> = bridge.kept().into_iter().collect();
        let mut tools: Vec<Cow<'a, RawValue>> = match policy {
            ToolsPolicy::Client => client_kept,
            ToolsPolicy::Reference | ToolsPolicy::Intersect => self
                .tools
                .iter()
                .filter(|t| flavour.allows(&t.name))
                .filter(|t| policy == ToolsPolicy::Reference || wanted.contains(&t.name))
                // A kept client tool of the same name is the one the model's calls go to.
                .filter(|t| !kept.contains(&t.name))
                .map(|t| self.definition(t, platform))
                .collect(),
        };
        tools.extend(extras);
        Selection { tools }
    }
}

/// The client's own definition, as a Chat Completions tool (hosted tools have none; an unknown
/// kind a Chat Completions client sent goes back as it came).
fn to_raw(def: &ToolDefinition) -> Option<Cow<'static, RawValue>> {
    let raw = match def {
        ToolDefinition::Other { raw, .. } => serde_json::value::to_raw_value(raw),
        ToolDefinition::Function(_) | ToolDefinition::Freeform(_) => {
            serde_json::value::to_raw_value(&crate::harness::plain::tool(def)?)
        }
    };
    raw.ok().map(Cow::Owned)
}

/// Parses a description in the prompts' template syntax: `{{temp_dir}}` is filled now, the
/// platform's placeholders are left for [`fill`]. The old single-brace forms are refused.
fn bind_description(description: &str, temp_dir: &str) -> Result<Pattern, BindError> {
    let pattern = Template::parse(description)
        .and_then(|t| t.bind(&[(TEMP_DIR, temp_dir)], &PLATFORM_HOLES))
        .map_err(|source| BindError::Template {
            source,
            known: "descriptions know {{os}}, {{shell}}, {{temp_dir}} and {{timeout_description}}",
        })?;
    let names = ["os", "shell", "temp_dir", "timeout_description"];
    if let Some(name) = names.into_iter().find(|name| {
        let old = format!("{{{name}}}");
        pattern.texts().any(|text| text.contains(&old))
    }) {
        return Err(BindError::OldForm { name });
    }
    Ok(pattern)
}

/// The description for `platform`: its name, the shell opencode names there, its timeout text.
fn fill(pattern: &Pattern, platform: &str, host: &HostInfo) -> String {
    let linux = platform == "linux";
    let shell = if linux {
        "bash".to_owned()
    } else {
        host.shell
            .as_deref()
            .and_then(|s| Path::new(s).file_name())
            .map_or_else(|| "zsh".to_owned(), |n| n.to_string_lossy().into_owned())
    };
    let timeout = if linux {
        "120000ms"
    } else {
        "120000ms (2 minutes)"
    };
    pattern.fill(&[platform, &shell, timeout])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::profiles::Profiles;

    fn catalog(description: &str) -> Result<Catalog, CatalogError> {
        let tool = serde_json::json!({"type": "function", "function": {"name": "bash",
            "description": description, "parameters": {"type": "object"}}});
        let texts = [ToolText {
            name: "bash".into(),
            json: tool.to_string(),
        }];
        let host = HostInfo {
            shell: Some("/usr/bin/fish".into()),
            temp_dir: "/t".into(),
            utc_offset: chrono::FixedOffset::east_opt(0).expect("UTC"),
        };
        Catalog::new(&texts, Profiles::built_in("opencode"), "linux", host)
    }

    #[test]
    fn descriptions_fill_per_platform_and_refuse_the_old_syntax() {
        let catalog =
            catalog("{{os}} {{ shell }} {{temp_dir}} {{timeout_description}} {x}").expect("valid");
        let tool = &catalog.tools[0];
        let description = |raw: &RawValue| {
            serde_json::from_str::<serde_json::Value>(raw.get()).expect("json")["function"]
                ["description"]
                .clone()
        };
        assert_eq!(
            description(&tool.rendered),
            "linux bash /t/opencode 120000ms {x}"
        );
        assert_eq!(
            description(&catalog.definition(tool, "darwin")),
            "darwin fish /t/opencode 120000ms (2 minutes) {x}"
        );
        let err = catalog_error("on {os}");
        assert!(
            err.contains("`bash`") && err.contains("write `{{os}}`"),
            "{err}"
        );
        let err = catalog_error("on {{ arch }}");
        assert!(err.contains("`arch`"), "{err}");
    }

    fn catalog_error(description: &str) -> String {
        match catalog(description) {
            Ok(_) => String::new(),
            Err(err) => err.to_string(),
        }
    }
}
