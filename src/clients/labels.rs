//! Tool names as metric labels. A client chooses its tools' names, and every distinct label
//! value is a series the metrics recorder keeps for the life of the process (issue 30: 150
//! requests of 1,000 names made 150,001 series and a 15 MB `/metrics`). So a tool name is a label
//! only when the proxy knows it — a name in one of its client profiles (its aliases' client and
//! harness tools, the tools it drops, its fingerprint) or one of the harness's own tools — and
//! any other name is `other`. Every label the proxy makes of a name is clipped (`clip`).
//!
//! Owns: the set of known names, folding and clipping. Must not: learn a name from a request.

use std::collections::HashSet;

use super::profiles::Profiles;

/// What a tool name the proxy does not know becomes.
pub const OTHER: &str = "other";
/// The most characters of a label made from a name.
pub const MAX_LABEL_CHARS: usize = 64;

/// The tool names that are labels as they are; fixed at start-up.
#[derive(Debug, Default)]
pub struct ToolLabels {
    known: HashSet<String>,
}

impl ToolLabels {
    /// The names `profiles` use and the harness's own `harness_tools`.
    pub fn new<'a>(
        profiles: &'a Profiles,
        harness_tools: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let known = profiles
            .tool_names()
            .chain(harness_tools)
            .filter(|name| !name.is_empty())
            .map(clip)
            .collect();
        Self { known }
    }

    /// `name` as a label: itself (clipped) when known, else `other`.
    pub fn label(&self, name: &str) -> String {
        let clipped = clip(name);
        if self.known.contains(&clipped) && clipped == name {
            clipped
        } else {
            OTHER.to_owned()
        }
    }

    /// How many names are labels as they are (with `other`, the most series a tool label
    /// makes per other label).
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

/// Any value as a label: at most `MAX_LABEL_CHARS` characters of `[A-Za-z0-9_.:/-]` (others
/// become `_`), so that no label is long or breaks the exposition format.
pub fn clip(value: &str) -> String {
    value
        .chars()
        .take(MAX_LABEL_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> ToolLabels {
        let profiles = Profiles::load(&[]).expect("built-in profiles");
        ToolLabels::new(&profiles, ["bash", "read", "todowrite"])
    }

    #[test]
    fn known_names_stay_and_any_other_is_other() {
        let labels = labels();
        // Claude Code's, Codex's, Cline's, Gemini CLI's own names, and the harness's.
        for name in [
            "Bash",
            "shell",
            "run_commands",
            "read_file",
            "bash",
            "todowrite",
        ] {
            assert_eq!(labels.label(name), name);
        }
        for name in ["mcp__github__get_issue", "tool_7", "Bash ", ""] {
            assert_eq!(labels.label(name), OTHER, "{name:?}");
        }
        assert_eq!(labels.label(&"x".repeat(100_000)), OTHER);
        assert!(labels.len() < 200, "a bounded set: {}", labels.len());
    }

    #[test]
    fn labels_are_clipped() {
        assert_eq!(clip("mcp__github/get-issue.v2"), "mcp__github/get-issue.v2");
        assert_eq!(clip("a b\"c"), "a_b_c");
        assert_eq!(clip(&"x".repeat(500)).len(), MAX_LABEL_CHARS);
        assert_eq!(clip(&"é".repeat(500)).len(), MAX_LABEL_CHARS);
    }
}
