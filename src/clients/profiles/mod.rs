//! Alias profiles: a small data table per client dialect mapping its tools to the harness's tool
//! set (opencode's, for the `opencode` harness), with argument translation both ways and its
//! agent's tool results read as the harness's tools word them. Built in as code (`codex`,
//! `claude-code`) or as TOML data files (`profiles/*.toml`, compiled in); operators add more
//! the same way (`clients.profiles`). `detect` owns the table of profiles and picking one;
//! `results` the result texts. Structural converters live one file per dialect beside
//! (`codex`, `claude_code`, `pi`, `gemini_cli`, `cline`); a plain rename needs none.
//!
//! Owns: one profile's data and its conversions. Must not: decide which tools reach the upstream
//! (`bridge`), do I/O.

mod convert;
mod detect;
mod results;

use convert::{convert_to_client, convert_to_harness, parse_object, plain_output};
pub use detect::{ProfileError, Profiles, UnknownProfile};
pub use results::ResultRule;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::cline;
use super::codex;
use super::codex_responses;
use super::pi;

/// How one aliased tool's arguments are translated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Converter {
    /// Arguments are the same on both sides.
    #[default]
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
    /// pi `edit {path, edits: [{oldText, newText}]}` ↔ one opencode `edit` per edit.
    PiEdit,
    /// Gemini CLI `read_file {file_path, start_line, end_line}` ↔ `read {filePath, offset, limit}`.
    LineRange,
    /// Gemini CLI `write_todos {todos: [{description, status}]}` ↔ `todowrite`.
    GeminiTodos,
    /// A fetch tool taking only a prompt with the URL in it (Gemini CLI `web_fetch`) ↔ `webfetch`.
    PromptFetch,
    /// Cline `run_commands {commands: [..]}` ↔ `bash`.
    ClineCommands,
    /// Cline `read_files {files: [{path, start_line, end_line}]}` ↔ `read`.
    ClineReadFiles,
    /// Cline `editor {path, old_text, new_text, insert_line}` ↔ `edit` / `write`.
    ClineEditor,
    /// Cline `search_codebase {queries: [..]}` ↔ `grep`.
    ClineSearch,
    /// Cline `fetch_web_content {requests: [{url, prompt}]}` ↔ `webfetch`.
    ClineFetch,
    /// Qwen Code `todo_write {todos: [{content, status, id}]}` ↔ `todowrite`.
    QwenTodos,
}

/// How an agent's tool result text reads as the harness's tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputReader {
    /// Gemini CLI's and Qwen Code's shell block (`Command: …`, `Output: …`, `Exit Code: …`):
    /// the output alone, `(no output)` when empty.
    ShellBlock,
    /// Cline's JSON results (`[{query, result, success}]`): the result texts.
    ClineResults,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alias {
    pub client: String,
    /// The harness tool (`harness` in new files; `opencode`, its first name, still read).
    #[serde(alias = "harness")]
    pub opencode: String,
    #[serde(default = "identity_converter")]
    pub converter: Converter,
    /// For `converter = "fields"` / `"only"`: client field → harness field.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// Units: client field → factor, harness value = client value × factor (pi's `timeout` in
    /// seconds is opencode's in milliseconds: 1000).
    #[serde(default)]
    pub scale: BTreeMap<String, f64>,
    /// Origins: client field → offset, harness value = client value × scale + shift (Crush
    /// counts lines from 0, opencode from 1: 1).
    #[serde(default)]
    pub shift: BTreeMap<String, f64>,
    /// Client fields the harness's call has no value for but the client's schema requires:
    /// client field → the value sent (Gemini CLI's `replace.instruction`).
    #[serde(default)]
    pub defaults: BTreeMap<String, Value>,
    /// How this tool's result text reads as the harness tool's.
    #[serde(default)]
    pub output: Option<OutputReader>,
}

impl Alias {
    pub fn new(client: &str, harness: &str, converter: Converter) -> Self {
        Self {
            client: client.into(),
            opencode: harness.into(),
            converter,
            ..Self::default()
        }
    }

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
#[derive(Debug, Clone, Default, Deserialize)]
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
    /// `x-app` header values that select this profile (Claude Code sends `cli`).
    #[serde(default)]
    pub apps: Vec<String>,
    /// The offered tool set that gives this agent away when no header does: every entry,
    /// `tool` or `tool.parameter`, must be offered (pi: `write.path`, `edit.edits`).
    #[serde(default)]
    pub fingerprint: Vec<String>,
    /// This agent's internal tools that mean nothing upstream: never sent, never kept.
    #[serde(default)]
    pub drop: Vec<String>,
    /// The agent's result texts, as the harness's tools word them.
    #[serde(default, rename = "result")]
    pub results: Vec<ResultRule>,
}

impl Profile {
    pub fn identity() -> Self {
        Self {
            name: "opencode".into(),
            user_agents: vec!["opencode/".into()],
            ..Self::default()
        }
    }

    pub fn codex() -> Self {
        Self {
            name: "codex".into(),
            user_agents: crate::conversation::CODEX_USER_AGENTS
                .iter()
                .map(|&agent| agent.to_owned())
                .collect(),
            unwrap_output_json: true,
            aliases: vec![
                Alias::new("shell", "bash", Converter::CodexShell),
                Alias::new("shell_command", "bash", Converter::CodexShellCommand),
                Alias::new("update_plan", "todowrite", Converter::CodexUpdatePlan),
            ],
            ..Self::default()
        }
    }

    /// Codex CLI 0.95+ on the Responses front: `exec_command` and the freeform `apply_patch`.
    /// Codex's User-Agents with `exec_command` offered (the Responses front also names it,
    /// `protocols::responses::CODEX_PROFILE`, from the same headers).
    pub fn codex_responses() -> Self {
        Self {
            name: "codex-responses".into(),
            user_agents: crate::conversation::CODEX_USER_AGENTS
                .iter()
                .map(|&agent| agent.to_owned())
                .collect(),
            fingerprint: vec!["exec_command".into()],
            unwrap_output_json: true,
            aliases: vec![
                Alias::new("exec_command", "bash", Converter::CodexExecCommand),
                Alias::new("apply_patch", "edit", Converter::CodexApplyPatch),
                Alias::new("apply_patch", "write", Converter::CodexApplyPatch),
                Alias::new("update_plan", "todowrite", Converter::CodexUpdatePlan),
            ],
            ..Self::default()
        }
    }

    /// No alias, no result rewriting: the client speaks the harness's dialect (its tools still
    /// go through the bridge's schema check).
    pub fn is_identity(&self) -> bool {
        self.aliases.is_empty() && !self.unwrap_output_json && self.results.is_empty()
    }

    fn by_client(&self, client_tool: &str) -> Option<&Alias> {
        self.aliases.iter().find(|a| a.client == client_tool)
    }

    pub fn has_alias_for(&self, client_tool: &str) -> bool {
        self.by_client(client_tool).is_some()
    }

    pub fn drops(&self, client_tool: &str) -> bool {
        self.drop.iter().any(|d| d == client_tool)
    }

    /// The alias for a harness tool: the one whose client tool was offered, when several
    /// client tools stand for it (Codex's `shell` and `shell_command`); else the first.
    fn by_opencode(&self, opencode_tool: &str, offered: &dyn Fn(&str) -> bool) -> Option<&Alias> {
        let mut candidates = self.aliases.iter().filter(|a| a.opencode == opencode_tool);
        let first = candidates.clone().next();
        candidates.find(|a| offered(&a.client)).or(first)
    }

    /// The offered client tool that takes calls to `harness_tool`, by this profile's aliases.
    pub fn preferred_client<'a>(
        &'a self,
        harness_tool: &str,
        offered: &dyn Fn(&str) -> bool,
    ) -> Option<&'a str> {
        self.aliases
            .iter()
            .filter(|a| a.opencode == harness_tool)
            .find(|a| offered(&a.client))
            .map(|a| a.client.as_str())
    }

    /// Every harness tool a client tool's aliases name (`apply_patch` is both `edit` and
    /// `write`); none when it has no alias.
    pub fn harness_names<'a>(&'a self, client_tool: &str) -> Vec<&'a str> {
        self.aliases
            .iter()
            .filter(|a| a.client == client_tool)
            .map(|a| a.opencode.as_str())
            .collect()
    }

    /// A call from the client's history in the harness's terms: (name, arguments text).
    /// Arguments that do not translate are kept as they are.
    pub fn call_to_opencode(&self, client_tool: &str, arguments: &str) -> (String, String) {
        let mut calls = self.calls_to_opencode(client_tool, arguments);
        if calls.len() == 1 {
            calls.remove(0)
        } else {
            (client_tool.to_owned(), arguments.to_owned())
        }
    }

    /// A call from the client's history as the harness calls it: one call, or several when the
    /// client's tool does several things at once (pi's `edits[]`, Cline's `commands[]` run as
    /// one).
    pub fn calls_to_opencode(&self, client_tool: &str, arguments: &str) -> Vec<(String, String)> {
        let Some(alias) = self.by_client(client_tool) else {
            return vec![(client_tool.to_owned(), arguments.to_owned())];
        };
        match alias.converter {
            // The patch decides the tool: `write`, `edit`, or `bash` running it.
            Converter::CodexApplyPatch => {
                return vec![codex_responses::patch_to_opencode(arguments)];
            }
            Converter::PiEdit => {
                if let Some(edits) = parse_object(arguments).and_then(|a| pi::edit_to_opencode(&a))
                {
                    return edits
                        .into_iter()
                        .map(|e| (alias.opencode.clone(), e.to_string()))
                        .collect();
                }
            }
            Converter::ClineEditor => {
                if let Some((tool, args)) =
                    parse_object(arguments).and_then(|a| cline::editor_to_opencode(&a))
                {
                    return vec![(tool.to_owned(), args.to_string())];
                }
            }
            _ => {}
        }
        let translated = parse_object(arguments).and_then(|args| convert_to_harness(alias, args));
        vec![(
            alias.opencode.clone(),
            translated.map_or_else(|| arguments.to_owned(), |v| v.to_string()),
        )]
    }

    /// A complete call the upstream made, in the client's terms; `None` when there is no alias
    /// for it or its arguments do not translate.
    pub fn call_to_client(
        &self,
        opencode_tool: &str,
        arguments: &str,
        offered: &[String],
    ) -> Option<(String, String)> {
        self.call_to_client_if(opencode_tool, arguments, &|client| {
            offered.iter().any(|o| o == client)
        })
    }

    /// `call_to_client`, with the offered tools asked of an index (`offered(name)`).
    pub fn call_to_client_if(
        &self,
        opencode_tool: &str,
        arguments: &str,
        offered: &dyn Fn(&str) -> bool,
    ) -> Option<(String, String)> {
        let alias = self.by_opencode(opencode_tool, offered)?;
        let args = parse_object(arguments)?;
        let translated = convert_to_client(alias, opencode_tool, args)?;
        Some((alias.client.clone(), translated.to_string()))
    }

    /// A tool result from the client's history, as the harness's tools return it.
    pub fn output_to_opencode(&self, client_tool: &str, text: &str) -> String {
        let alias = self.by_client(client_tool);
        let reduced = match alias.map(|a| (a.converter, a.output)) {
            Some((_, Some(OutputReader::ShellBlock))) => results::shell_block(text),
            Some((_, Some(OutputReader::ClineResults))) => results::cline_results(text),
            Some((Converter::CodexExecCommand, _)) => codex_responses::exec_output(text),
            Some((Converter::CodexApplyPatch, _)) => codex_responses::patch_output(text),
            _ => None,
        };
        let text = reduced.as_deref().unwrap_or(text);
        if let Some(worded) = results::reword(&self.results, client_tool, text) {
            return worded;
        }
        if reduced.is_some() {
            return text.to_owned();
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
