//! Alias profiles: a small data table per client dialect mapping its tools to opencode's, with
//! argument translation both ways. `opencode` is the identity; `codex` maps Codex CLI's Chat
//! Completions tools; more profiles load from TOML files at start-up, no code needed.

use std::sync::Arc;

use http::{HeaderMap, header};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::claude_code;
use super::codex;
use super::codex_responses;
use crate::conversation::mapping::{CallMapper, CallRoute};

/// `x-harness-client` named no known profile.
#[derive(Debug, thiserror::Error)]
#[error("unknown client profile `{name}` in x-harness-client; known profiles: {known}")]
pub struct UnknownProfile {
    pub name: String,
    pub known: String,
}

/// How one aliased tool's arguments are translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Converter {
    /// Arguments are the same on both sides.
    Identity,
    /// Top-level fields renamed by the alias's `fields` table (client name → opencode name).
    Fields,
    /// Codex `shell` `{command: [argv], workdir?, timeout_ms?}` ↔ opencode `bash`.
    CodexShell,
    /// Codex `update_plan` `{explanation?, plan: [{step, status}]}` ↔ opencode `todowrite`.
    CodexUpdatePlan,
    /// Codex `shell_command` `{command: string, workdir?, timeout_ms?, login?}` ↔ opencode `bash`
    /// (offered instead of `shell` for gpt-5 models).
    CodexShellCommand,
    /// Codex (Responses) `exec_command` `{cmd, workdir?, yield_time_ms?, …}` ↔ opencode `bash`.
    CodexExecCommand,
    /// Codex (Responses) freeform `apply_patch` `{input: patch}` ↔ opencode `edit` / `write`.
    CodexApplyPatch,
    /// Top-level fields renamed by the `fields` table, and only those kept (both ways).
    Only,
    /// Claude Code `Bash` ↔ opencode `bash` (see `claude_code`).
    ClaudeBash,
    /// Claude Code `TodoWrite` ↔ opencode `todowrite`.
    ClaudeTodoWrite,
    /// Claude Code `WebFetch` ↔ opencode `webfetch`.
    ClaudeWebFetch,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alias {
    pub client: String,
    pub opencode: String,
    #[serde(default = "identity_converter")]
    pub converter: Converter,
    /// For `converter = "fields"`: client field → opencode field.
    #[serde(default)]
    pub fields: std::collections::BTreeMap<String, String>,
}

impl Alias {
    /// The `fields` table as (from, to) pairs, toward opencode or back toward the client.
    fn renames(&self, to_opencode: bool) -> Vec<(&str, &str)> {
        self.fields
            .iter()
            .map(|(c, o)| {
                if to_opencode {
                    (c.as_str(), o.as_str())
                } else {
                    (o.as_str(), c.as_str())
                }
            })
            .collect()
    }
}

fn identity_converter() -> Converter {
    Converter::Identity
}

/// A client's tool dialect.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    /// User-Agent prefixes that select this profile when no `x-harness-client` header is sent.
    #[serde(default)]
    pub user_agents: Vec<String>,
    /// Tool results shaped `{"output": …, "metadata": …}` reach the upstream as the output text.
    #[serde(default)]
    pub unwrap_output_json: bool,
    #[serde(default, rename = "alias")]
    pub aliases: Vec<Alias>,
}

impl Profile {
    pub fn identity() -> Self {
        Self {
            name: "opencode".into(),
            user_agents: vec!["opencode/".into()],
            unwrap_output_json: false,
            aliases: Vec::new(),
        }
    }

    pub fn codex() -> Self {
        let alias = |client: &str, opencode: &str, converter| Alias {
            client: client.into(),
            opencode: opencode.into(),
            converter,
            fields: std::collections::BTreeMap::new(),
        };
        Self {
            name: "codex".into(),
            user_agents: crate::conversation::CODEX_USER_AGENTS
                .iter()
                .map(|&agent| agent.to_owned())
                .collect(),
            unwrap_output_json: true,
            aliases: vec![
                alias("shell", "bash", Converter::CodexShell),
                alias("shell_command", "bash", Converter::CodexShellCommand),
                alias("update_plan", "todowrite", Converter::CodexUpdatePlan),
            ],
        }
    }

    /// Codex CLI 0.95+ on the Responses front: `exec_command` and the freeform `apply_patch`.
    /// No User-Agent of its own: the Responses front names it (`ClientInfo::profile`,
    /// `protocols::responses::CODEX_PROFILE`).
    pub fn codex_responses() -> Self {
        let alias = |client: &str, opencode: &str, converter| Alias {
            client: client.into(),
            opencode: opencode.into(),
            converter,
            fields: std::collections::BTreeMap::new(),
        };
        Self {
            name: "codex-responses".into(),
            user_agents: Vec::new(),
            unwrap_output_json: true,
            aliases: vec![
                alias("exec_command", "bash", Converter::CodexExecCommand),
                alias("apply_patch", "edit", Converter::CodexApplyPatch),
                alias("apply_patch", "write", Converter::CodexApplyPatch),
                alias("update_plan", "todowrite", Converter::CodexUpdatePlan),
            ],
        }
    }

    pub fn is_identity(&self) -> bool {
        self.aliases.is_empty() && !self.unwrap_output_json
    }

    fn by_client(&self, client_tool: &str) -> Option<&Alias> {
        self.aliases.iter().find(|a| a.client == client_tool)
    }

    /// The alias for an opencode tool: the one whose client tool was offered, when several
    /// client tools stand for it (Codex's `shell` and `shell_command`); else the first.
    fn by_opencode(&self, opencode_tool: &str, offered: &[String]) -> Option<&Alias> {
        let mut candidates = self.aliases.iter().filter(|a| a.opencode == opencode_tool);
        let first = candidates.clone().next();
        candidates.find(|a| offered.contains(&a.client)).or(first)
    }

    /// The opencode tool a client tool stands for (itself when unmapped).
    pub fn opencode_name<'a>(&'a self, client_tool: &'a str) -> &'a str {
        self.by_client(client_tool)
            .map_or(client_tool, |a| a.opencode.as_str())
    }

    /// Every opencode tool a client tool stands for (`apply_patch` is both `edit` and `write`);
    /// itself when unmapped.
    pub fn opencode_names<'a>(&'a self, client_tool: &'a str) -> Vec<&'a str> {
        let names: Vec<&str> = self
            .aliases
            .iter()
            .filter(|a| a.client == client_tool)
            .map(|a| a.opencode.as_str())
            .collect();
        if names.is_empty() {
            vec![client_tool]
        } else {
            names
        }
    }

    /// A call from the client's history in opencode's terms: (name, arguments text). Arguments
    /// that do not translate are kept as they are.
    pub fn call_to_opencode(&self, client_tool: &str, arguments: &str) -> (String, String) {
        let Some(alias) = self.by_client(client_tool) else {
            return (client_tool.to_owned(), arguments.to_owned());
        };
        if alias.converter == Converter::CodexApplyPatch {
            // The patch decides the tool: `write`, `edit`, or `bash` running it.
            return codex_responses::patch_to_opencode(arguments);
        }
        let translated = parse_object(arguments).and_then(|args| match alias.converter {
            Converter::Identity => Some(Value::Object(args)),
            Converter::Fields => {
                let renames: Vec<(&str, &str)> = alias
                    .fields
                    .iter()
                    .map(|(c, o)| (c.as_str(), o.as_str()))
                    .collect();
                Some(rename_fields(args, &renames))
            }
            Converter::CodexShell | Converter::CodexShellCommand => codex::shell_to_bash(&args),
            Converter::CodexUpdatePlan => codex::plan_to_todos(&args),
            Converter::CodexExecCommand => codex_responses::exec_to_bash(&args),
            Converter::CodexApplyPatch => None,
            Converter::Only => Some(keep_fields(&args, &alias.renames(true))),
            Converter::ClaudeBash => claude_code::bash_to_opencode(&args),
            Converter::ClaudeTodoWrite => claude_code::todos_to_opencode(&args),
            Converter::ClaudeWebFetch => claude_code::webfetch_to_opencode(&args),
        });
        (
            alias.opencode.clone(),
            translated.map_or_else(|| arguments.to_owned(), |v| v.to_string()),
        )
    }

    /// A complete call the upstream made, in the client's terms; `None` when there is no alias
    /// for it or its arguments do not translate.
    pub fn call_to_client(
        &self,
        opencode_tool: &str,
        arguments: &str,
        offered: &[String],
    ) -> Option<(String, String)> {
        let alias = self.by_opencode(opencode_tool, offered)?;
        let args = parse_object(arguments)?;
        let translated = match alias.converter {
            Converter::Identity => Value::Object(args),
            Converter::Fields => {
                let renames: Vec<(&str, &str)> = alias
                    .fields
                    .iter()
                    .map(|(c, o)| (o.as_str(), c.as_str()))
                    .collect();
                rename_fields(args, &renames)
            }
            Converter::CodexShell => codex::bash_to_shell(&args)?,
            Converter::CodexShellCommand => codex::bash_to_shell_command(&args)?,
            Converter::CodexUpdatePlan => codex::todos_to_plan(&args)?,
            Converter::CodexExecCommand => codex_responses::bash_to_exec(&args)?,
            Converter::CodexApplyPatch => codex_responses::opencode_to_patch(opencode_tool, &args)?,
            Converter::Only => keep_fields(&args, &alias.renames(false)),
            Converter::ClaudeBash => claude_code::bash_to_client(&args)?,
            Converter::ClaudeTodoWrite => claude_code::todos_to_client(&args)?,
            Converter::ClaudeWebFetch => claude_code::webfetch_to_client(&args)?,
        };
        Some((alias.client.clone(), translated.to_string()))
    }

    /// A tool result from the client's history, as opencode's tools return it.
    pub fn output_to_opencode(&self, client_tool: &str, text: &str) -> String {
        let reduced = match self.by_client(client_tool).map(|a| a.converter) {
            Some(Converter::CodexExecCommand) => codex_responses::exec_output(text),
            Some(Converter::CodexApplyPatch) => codex_responses::patch_output(text),
            _ => None,
        };
        if let Some(reduced) = reduced {
            return reduced;
        }
        if self.unwrap_output_json
            && let Some(Value::String(output)) =
                parse_object(text).and_then(|mut o| o.remove("output"))
        {
            return plain_output(output);
        }
        if self.unwrap_output_json
            && let Some(output) = codex::text_output(text)
        {
            return plain_output(output.to_owned());
        }
        text.to_owned()
    }
}

/// What opencode's bash answers for a command that printed nothing.
fn plain_output(output: String) -> String {
    if output.is_empty() {
        "(no output)".to_owned()
    } else {
        output
    }
}

fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Renames top-level fields by `renames` (from → to); others keep their names and order.
fn rename_fields(args: Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        let renamed = renames
            .iter()
            .find(|(from, _)| *from == key)
            .map_or(key, |(_, to)| (*to).to_owned());
        out.insert(renamed, value);
    }
    Value::Object(out)
}

/// The fields named in `renames` (from → to), renamed, in the order they came; others dropped.
fn keep_fields(args: &Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        if let Some((_, to)) = renames.iter().find(|(from, _)| from == key) {
            out.insert((*to).to_owned(), value.clone());
        }
    }
    Value::Object(out)
}

/// The profiles this process knows, and how a request picks one.
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
            Arc::new(Profile::codex()),
            Arc::new(Profile::codex_responses()),
            Arc::new(Profile::claude_code()),
        ];
        for (shown, text) in files {
            let shown = shown.clone();
            let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::File {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            if let Some(alias) = profile.aliases.iter().find(|a| {
                matches!(a.converter, Converter::Fields | Converter::Only) && a.fields.is_empty()
            }) {
                return Err(ProfileError::File {
                    path: shown,
                    message: format!(
                        "alias `{}`: converter `fields` needs a `fields` table",
                        alias.client
                    ),
                });
            }
            profiles.retain(|p| p.name != profile.name);
            profiles.push(Arc::new(profile));
        }
        Ok(Self { profiles })
    }

    pub fn names(&self) -> String {
        self.profiles
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Header `x-harness-client`, else the profile the client's protocol implies (`implied`:
    /// `codex-responses` on the Responses front), else the User-Agent prefix, else the identity
    /// profile.
    pub fn detect(
        &self,
        headers: &HeaderMap,
        implied: Option<&str>,
    ) -> Result<Arc<Profile>, UnknownProfile> {
        if let Some(name) = headers
            .get("x-harness-client")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .or(implied)
        {
            return self
                .profiles
                .iter()
                .find(|p| p.name == name)
                .cloned()
                .ok_or_else(|| UnknownProfile {
                    name: name.to_owned(),
                    known: self.names(),
                });
        }
        let agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let by_agent = self.profiles.iter().find(|p| {
            p.user_agents
                .iter()
                .any(|prefix| agent.starts_with(prefix.as_str()))
        });
        Ok(by_agent
            .or_else(|| self.profiles.first())
            .cloned()
            .unwrap_or_else(|| Arc::new(Profile::identity())))
    }
}

/// How one request's upstream tool calls reach its client.
pub struct RequestCalls {
    pub profile: Arc<Profile>,
    /// Names of the tools the client sent: calls to them pass through as its own.
    pub client_tools: Vec<String>,
}

impl CallMapper for RequestCalls {
    fn route(&self, name: &str) -> CallRoute {
        if self.profile.by_opencode(name, &self.client_tools).is_some() {
            CallRoute::Translate
        } else if self.client_tools.iter().any(|t| t == name) {
            CallRoute::Native
        } else {
            CallRoute::Unmapped
        }
    }

    fn to_client(&self, name: &str, arguments: &str) -> Option<(String, String)> {
        self.profile
            .call_to_client(name, arguments, &self.client_tools)
    }

    fn client_name(&self, name: &str) -> Option<String> {
        self.profile
            .by_opencode(name, &self.client_tools)
            .map(|alias| alias.client.clone())
    }

    fn profile(&self) -> &str {
        &self.profile.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codex() -> Profile {
        Profile::codex()
    }

    #[test]
    fn untranslatable_arguments_are_left_alone() {
        assert_eq!(
            codex().call_to_opencode("shell", "not json"),
            ("bash".into(), "not json".into())
        );
        assert_eq!(
            codex().call_to_client("bash", "{\"command\": 3}", &[]),
            None
        );
        assert_eq!(
            codex().call_to_client("read", "{}", &[]),
            None,
            "no alias for read"
        );
        assert_eq!(
            Profile::identity().call_to_opencode("bash", "{\"a\":1}"),
            ("bash".into(), "{\"a\":1}".into())
        );
    }

    #[test]
    fn detection_by_header_then_user_agent_then_identity() {
        let profiles = Profiles::load(&[]).expect("built-ins");
        let detect = |pairs: &[(&str, &str)]| {
            let mut headers = HeaderMap::new();
            for (k, v) in pairs {
                headers.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                    v.parse().expect("value"),
                );
            }
            profiles.detect(&headers, None).map(|p| p.name.clone())
        };
        assert_eq!(
            detect(&[
                ("x-harness-client", "codex"),
                ("user-agent", "opencode/1.0")
            ])
            .ok()
            .as_deref(),
            Some("codex")
        );
        assert_eq!(
            detect(&[("user-agent", "codex_exec/0.94.0 (Linux)")])
                .ok()
                .as_deref(),
            Some("codex")
        );
        assert_eq!(
            detect(&[("user-agent", "codex_cli_rs/0.94.0")])
                .ok()
                .as_deref(),
            Some("codex")
        );
        assert_eq!(
            detect(&[("user-agent", "opencode/0.5.1")]).ok().as_deref(),
            Some("opencode")
        );
        assert_eq!(
            detect(&[("user-agent", "curl/8")]).ok().as_deref(),
            Some("opencode")
        );
        let err = detect(&[("x-harness-client", "vim")]).expect_err("unknown profile");
        assert!(
            err.to_string()
                .contains("known profiles: opencode, codex, codex-responses"),
            "{err}"
        );
    }

    #[test]
    fn profiles_load_from_files() {
        let file = |text: &str| vec![("mine.toml".to_owned(), text.to_owned())];
        let profiles = Profiles::load(&file(
            "name = \"mine\"\nuser_agents = [\"mine/\"]\n[[alias]]\nclient = \"run\"\nopencode = \"bash\"\nconverter = \"fields\"\nfields = { cmd = \"command\", cwd = \"workdir\" }\n",
        ))
        .expect("loads");
        let mut headers = HeaderMap::new();
        headers.insert(header::USER_AGENT, "mine/2".parse().expect("ua"));
        let mine = profiles.detect(&headers, None).expect("detected");
        assert_eq!(
            mine.call_to_opencode("run", r#"{"cmd":"ls","cwd":"/"}"#),
            ("bash".into(), r#"{"command":"ls","workdir":"/"}"#.into())
        );
        assert_eq!(
            mine.call_to_client("bash", r#"{"command":"ls","description":"d"}"#, &[]),
            Some(("run".into(), r#"{"cmd":"ls","description":"d"}"#.into()))
        );

        let err = Profiles::load(&file(
            "name = \"bad\"\n[[alias]]\nclient = \"x\"\nopencode = \"bash\"\nconverter = \"teleport\"\n",
        ))
            .err()
            .expect("bad converter")
            .to_string();
        assert!(
            err.contains("mine.toml") && err.contains("teleport"),
            "{err}"
        );
    }
}
