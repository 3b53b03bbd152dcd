//! The neutral capabilities every agent's tools are described against: what a tool *does*
//! (run a shell command, read a file, …), whatever an agent calls it. A client's call goes
//! client tool → capability → harness tool, and the model's call comes back harness tool →
//! capability → client tool, so any client meets any harness with no pair written by hand.
//!
//! Each capability has one **neutral argument form**, the pivot every profile converts to and
//! from. Its keys are spelled as opencode spells its arguments (opencode was the first harness and
//! its converters were written against them); the forms are defined here and nowhere else:
//!
//! | capability | neutral arguments (`*` required) |
//! |---|---|
//! | `shell` | `command*` string, `workdir` string, `timeout` integer milliseconds, `description` string |
//! | `read` | `filePath*`, `offset` first line (1-based), `limit` line count |
//! | `write` | `filePath*`, `content*` |
//! | `edit` | `filePath*`, `oldString*`, `newString*`, `replaceAll` boolean |
//! | `glob` | `pattern*`, `path` |
//! | `grep` | `pattern*`, `path`, `include` file glob |
//! | `fetch` | `url*`, `format` (`markdown`/`text`/`html`), `timeout` seconds |
//! | `todo` | `todos*`: `[{content, status (pending/in_progress/completed/cancelled), priority, id}]` |
//! | `agent` | `description`, `prompt*`, `subagent_type` |
//! | `skill` | `name*` |
//!
//! A neutral argument a client tool has no slot for is folded where its meaning survives (a
//! shell's `workdir` as `cd DIR && …`), dropped only when it changes nothing the tool does
//! (`informational`), and otherwise makes the call inexpressible for that tool: never dropped
//! silently.
//!
//! The neutral result words are the ones the first harness's tools answer with (`NO_OUTPUT`, …):
//! every client's result texts are reworded into them on the way upstream.
//!
//! Owns: the vocabulary. Must not: know an agent or a harness.

use serde::Deserialize;

/// What a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub enum Capability {
    Shell,
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    Fetch,
    Todo,
    Agent,
    Skill,
}

/// The result of a shell command that printed nothing, in the neutral words.
pub const NO_OUTPUT: &str = "(no output)";
/// A file written, in the neutral words.
pub const WROTE: &str = "Wrote file successfully.";
/// An edit applied, in the neutral words.
pub const EDITED: &str = "Edit applied successfully.";

impl Capability {
    pub const ALL: [Self; 10] = [
        Self::Shell,
        Self::Read,
        Self::Write,
        Self::Edit,
        Self::Glob,
        Self::Grep,
        Self::Fetch,
        Self::Todo,
        Self::Agent,
        Self::Skill,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Read => "read",
            Self::Write => "write",
            Self::Edit => "edit",
            Self::Glob => "glob",
            Self::Grep => "grep",
            Self::Fetch => "fetch",
            Self::Todo => "todo",
            Self::Agent => "agent",
            Self::Skill => "skill",
        }
    }

    /// A capability by its name, or by the name opencode's tool for it has (profile files written
    /// before the dialect layer name opencode's tools: `harness = "bash"`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .or(match name {
                "bash" => Some(Self::Shell),
                "webfetch" => Some(Self::Fetch),
                "todowrite" => Some(Self::Todo),
                "task" => Some(Self::Agent),
                _ => None,
            })
    }

    /// The neutral parameters, required first; the schema inference matches a client's against.
    pub fn parameters(self) -> &'static [Param] {
        match self {
            Self::Shell => SHELL,
            Self::Read => READ,
            Self::Write => WRITE,
            Self::Edit => EDIT,
            Self::Glob => GLOB,
            Self::Grep => GREP,
            Self::Fetch => FETCH,
            Self::Todo => TODO,
            Self::Agent => AGENT,
            Self::Skill => SKILL,
        }
    }

    /// Neutral arguments that change nothing the tool does, so a client tool without a slot for
    /// them may go without: a shell command's label, a fetch's preferred format and timeout, a
    /// sub-agent's label and kind (the client's default agent runs).
    pub fn informational(self, key: &str) -> bool {
        matches!(
            (self, key),
            (Self::Shell, "description")
                | (Self::Fetch, "format" | "timeout")
                | (Self::Agent, "description" | "subagent_type")
        )
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Capability {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::parse(&name).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|c| c.as_str()).collect();
            format!("unknown capability `{name}`; known: {}", known.join(", "))
        })
    }
}

const SHELL: &[Param] = &[
    Param::required("command", Kind::String),
    Param::optional("workdir", Kind::String),
    Param::optional("timeout", Kind::Number),
    Param::optional("description", Kind::String),
];
const READ: &[Param] = &[
    Param::required("filePath", Kind::String),
    Param::optional("offset", Kind::Number),
    Param::optional("limit", Kind::Number),
];
const WRITE: &[Param] = &[
    Param::required("filePath", Kind::String),
    Param::required("content", Kind::String),
];
const EDIT: &[Param] = &[
    Param::required("filePath", Kind::String),
    Param::required("oldString", Kind::String),
    Param::required("newString", Kind::String),
    Param::optional("replaceAll", Kind::Boolean),
];
const GLOB: &[Param] = &[
    Param::required("pattern", Kind::String),
    Param::optional("path", Kind::String),
];
const GREP: &[Param] = &[
    Param::required("pattern", Kind::String),
    Param::optional("path", Kind::String),
    Param::optional("include", Kind::String),
];
const FETCH: &[Param] = &[
    Param::required("url", Kind::String),
    Param::optional("format", Kind::String),
    Param::optional("timeout", Kind::Number),
];
const TODO: &[Param] = &[Param::required("todos", Kind::Array)];
const AGENT: &[Param] = &[
    Param::required("prompt", Kind::String),
    Param::optional("description", Kind::String),
    Param::optional("subagent_type", Kind::String),
];
const SKILL: &[Param] = &[Param::required("name", Kind::String)];

/// A neutral parameter's JSON kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Number,
    Boolean,
    Array,
}

impl Kind {
    /// Whether a schema's JSON type fits this kind (`integer` is a number).
    pub fn fits(self, json_type: &str) -> bool {
        matches!(
            (self, json_type),
            (Self::String, "string")
                | (Self::Number, "number" | "integer")
                | (Self::Boolean, "boolean")
                | (Self::Array, "array")
        )
    }
}

/// One neutral parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
}

impl Param {
    const fn required(name: &'static str, kind: Kind) -> Self {
        Self {
            name,
            kind,
            required: true,
        }
    }

    const fn optional(name: &'static str, kind: Kind) -> Self {
        Self {
            name,
            kind,
            required: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_named_by_their_own_names_and_by_opencode_s_tools() {
        for capability in Capability::ALL {
            assert_eq!(Capability::parse(capability.as_str()), Some(capability));
        }
        assert_eq!(Capability::parse("bash"), Some(Capability::Shell));
        assert_eq!(Capability::parse("todowrite"), Some(Capability::Todo));
        assert_eq!(Capability::parse("task"), Some(Capability::Agent));
        let unknown = Capability::try_from("teleport".to_owned()).expect_err("unknown");
        assert!(unknown.contains("known: shell, read"), "{unknown}");
    }

    #[test]
    fn every_capability_requires_something_first() {
        for capability in Capability::ALL {
            let params = capability.parameters();
            assert!(params[0].required, "{capability}");
            // Required parameters come before optional ones.
            let first_optional = params.iter().position(|p| !p.required);
            if let Some(at) = first_optional {
                assert!(params[at..].iter().all(|p| !p.required), "{capability}");
            }
        }
    }
}
