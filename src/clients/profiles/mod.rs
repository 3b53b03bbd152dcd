//! Profiles: each agent's tool dialect, described once against the neutral capabilities
//! (`clients::capability`): which of its tools does what, how its arguments convert to and from
//! the neutral form (rename tables, units, required constants, or a named structural converter),
//! how its results read in the neutral words, and how the agent is recognised. One description
//! serves the agent both as a client (its calls and results translated) and as a harness's tool
//! set (what the model is offered and calls): the bridge goes client → capability → harness.
//! Every profile is a data file (`profiles/*.toml`, compiled in; operators add more with
//! `clients.profiles`). `detect` owns the table and picking one; `results` the result texts;
//! `convert` one alias's conversion.
//!
//! Owns: one profile's data and its conversions. Must not: decide which tools reach the upstream
//! (`bridge`), know a harness, do I/O.

mod convert;
mod detect;
mod results;

pub use convert::plain_output;
pub use detect::{ProfileError, Profiles, UnknownProfile};
pub use results::{ResultRule, cline_results, kimi_system, shell_block};

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::capability::Capability;
use super::converter::{Named, ResultReader};
use crate::conversation::json_text;
use convert::{parse_object, wrapped_output};

/// How one aliased tool's arguments convert.
#[derive(Debug, Clone, Copy, Default)]
pub enum Conversion {
    /// The tool takes the neutral arguments as they are.
    #[default]
    Identity,
    /// Top-level fields renamed by the `fields` table (client name → neutral name), others kept.
    Fields,
    /// Top-level fields renamed by the `fields` table, and only those kept; a neutral argument
    /// with no field is folded or dropped only when that changes nothing (`capability`), else the
    /// call cannot be expressed for this tool.
    Only,
    /// A structural converter (`clients::converters`).
    Named(&'static Named),
}

/// One client tool standing for one capability.
#[derive(Debug, Clone)]
pub struct Alias {
    pub client: String,
    pub capability: Capability,
    pub conversion: Conversion,
    /// For `fields` / `only`: client field → neutral field.
    pub fields: BTreeMap<String, String>,
    /// Units: client field → factor, neutral value = client value × factor (pi's `timeout` in
    /// seconds is the neutral one in milliseconds: 1000).
    pub scale: BTreeMap<String, f64>,
    /// Origins: client field → offset, neutral value = client value × scale + shift (Crush counts
    /// lines from 0, the neutral read from 1: 1).
    pub shift: BTreeMap<String, f64>,
    /// Client fields the neutral call has no value for but the client's schema requires: client
    /// field → the value sent (Gemini CLI's `replace.instruction`).
    pub defaults: BTreeMap<String, Value>,
    /// How this tool's result text reads in the neutral words.
    pub output: Option<ResultReader>,
}

impl Alias {
    pub fn new(client: &str, capability: Capability, conversion: Conversion) -> Self {
        Self {
            client: client.into(),
            capability,
            conversion,
            fields: BTreeMap::new(),
            scale: BTreeMap::new(),
            shift: BTreeMap::new(),
            defaults: BTreeMap::new(),
            output: None,
        }
    }

    /// The `fields` table as (from, to) pairs, toward the neutral form or back toward the client.
    fn renames(&self, to_neutral: bool) -> Vec<(&str, &str)> {
        self.fields
            .iter()
            .map(|(c, n)| {
                if to_neutral {
                    (c.as_str(), n.as_str())
                } else {
                    (n.as_str(), c.as_str())
                }
            })
            .collect()
    }

    /// One call of this tool in neutral terms: one call, or several; `None` when the arguments
    /// do not convert.
    pub fn to_neutral(&self, args: Map<String, Value>) -> Option<Vec<(Capability, Value)>> {
        convert::to_neutral(self, args)
    }

    /// A neutral call of this alias's capability as this tool's arguments; `None` when it cannot
    /// be expressed for it.
    pub fn from_neutral(&self, args: Map<String, Value>) -> Option<Value> {
        convert::from_neutral(self, args)
    }
}

/// A client's tool dialect.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub name: String,
    /// User-Agent prefixes that select this profile when no `x-harness-client` header is sent.
    pub user_agents: Vec<String>,
    /// Tool results shaped `{"output": …, "metadata": …}` reach the upstream as the output text.
    pub unwrap_output_json: bool,
    pub aliases: Vec<Alias>,
    /// `x-app` header values that select this profile (Claude Code sends `cli`).
    pub apps: Vec<String>,
    /// The offered tool set that gives this agent away when no header does: every entry,
    /// `tool` or `tool.parameter`, must be offered (pi: `write.path`, `edit.edits`).
    pub fingerprint: Vec<String>,
    /// This agent's internal tools that mean nothing upstream: never sent, never kept.
    pub drop: Vec<String>,
    /// The agent's result texts, in the neutral words.
    pub results: Vec<ResultRule>,
    /// How the agent's sub-agents' requests are told from its main thread's.
    pub subagent: super::subagent::Markers,
}

/// The profile of a client no profile describes: its tools are read by inference
/// (`clients::infer`).
pub const NONE: &str = "none";

impl Profile {
    /// A client the proxy knows nothing of.
    pub fn none() -> Self {
        Self {
            name: NONE.into(),
            ..Self::default()
        }
    }

    /// A known agent (not `none`): its own system prompt is its persona, not its user's words.
    pub fn is_known_agent(&self) -> bool {
        self.name != NONE
    }

    pub fn has_alias_for(&self, client_tool: &str) -> bool {
        self.aliases.iter().any(|a| a.client == client_tool)
    }

    pub fn drops(&self, client_tool: &str) -> bool {
        self.drop.iter().any(|d| d == client_tool)
    }

    /// Every capability a client tool stands for (`apply_patch` is both an edit and a write);
    /// none when it has no alias.
    pub fn capabilities<'a>(
        &'a self,
        client_tool: &'a str,
    ) -> impl Iterator<Item = Capability> + 'a {
        self.aliases
            .iter()
            .filter(move |a| a.client == client_tool)
            .map(|a| a.capability)
    }

    /// The alias by which a client tool stands for a capability.
    pub fn alias(&self, client_tool: &str, capability: Capability) -> Option<&Alias> {
        self.aliases
            .iter()
            .find(|a| a.client == client_tool && a.capability == capability)
    }

    /// The offered tool that takes calls of a capability, by this profile's aliases: the first
    /// alias of it whose tool was offered (Codex's `shell` before `shell_command`).
    pub fn preferred_client(
        &self,
        capability: Capability,
        offered: &dyn Fn(&str) -> bool,
    ) -> Option<&Alias> {
        self.aliases
            .iter()
            .find(|a| a.capability == capability && offered(&a.client))
    }

    /// A call of a client tool in neutral terms: (capability, arguments text), one call or
    /// several when the tool does several things at once (pi's `edits[]`); `None` when the tool
    /// has no alias or its arguments do not convert.
    pub fn calls_to_neutral(
        &self,
        client_tool: &str,
        arguments: &str,
    ) -> Option<Vec<(Capability, String)>> {
        let alias = self.aliases.iter().find(|a| a.client == client_tool)?;
        let calls = alias.to_neutral(parse_object(arguments)?)?;
        Some(
            calls
                .into_iter()
                .map(|(capability, args)| (capability, json_text(&args)))
                .collect(),
        )
    }

    /// A neutral call as the offered client tool that takes it: (its name, arguments text);
    /// `None` when no offered tool has an alias for the capability or the call cannot be
    /// expressed for it.
    pub fn call_from_neutral(
        &self,
        capability: Capability,
        arguments: &str,
        offered: &dyn Fn(&str) -> bool,
    ) -> Option<(String, String)> {
        let alias = self.preferred_client(capability, offered)?;
        let converted = alias.from_neutral(parse_object(arguments)?)?;
        Some((alias.client.clone(), json_text(&converted)))
    }

    /// A tool result from the client's history, in the neutral words; an empty result is
    /// `(no output)` whatever the client.
    pub fn output_to_neutral(&self, client_tool: &str, text: &str) -> String {
        let worded = self.reworded(client_tool, text);
        if worded.trim().is_empty() {
            super::capability::NO_OUTPUT.to_owned()
        } else {
            worded
        }
    }

    fn reworded(&self, client_tool: &str, text: &str) -> String {
        let reader = self
            .aliases
            .iter()
            .find(|a| a.client == client_tool)
            .and_then(|a| a.output);
        let reduced = reader.and_then(|read| read(text));
        let text = reduced.as_deref().unwrap_or(text);
        if let Some(worded) = results::reword(&self.results, client_tool, text) {
            return worded;
        }
        if reduced.is_some() {
            return text.to_owned();
        }
        if self.unwrap_output_json
            && let Some(output) = wrapped_output(text)
        {
            return plain_output(output);
        }
        if self.unwrap_output_json
            && let Some(output) = results::text_output(text)
        {
            return plain_output(output.to_owned());
        }
        text.to_owned()
    }
}

/// The conversions as the unit tests of the dialect modules read them: by capability name (or
/// the name of opencode's tool for it), arguments as text.
#[cfg(test)]
impl Profile {
    /// A client call in neutral terms: its one call as (capability, arguments), else the call as
    /// it came.
    pub(crate) fn neutral(&self, client_tool: &str, arguments: &str) -> (String, String) {
        match self.calls_to_neutral(client_tool, arguments).as_deref() {
            Some([(capability, args)]) => (capability.as_str().to_owned(), args.clone()),
            _ => (client_tool.to_owned(), arguments.to_owned()),
        }
    }

    /// A neutral call as the client's: among `offered` (every tool when it is empty).
    pub(crate) fn client(
        &self,
        capability: &str,
        arguments: &str,
        offered: &[String],
    ) -> Option<(String, String)> {
        let capability = Capability::parse(capability)?;
        self.call_from_neutral(capability, arguments, &|tool| {
            offered.is_empty() || offered.iter().any(|o| o == tool)
        })
    }
}
