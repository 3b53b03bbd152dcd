//! The three prompt flavours (docs/wire.md §1 "Three flavours"), chosen by an exact compare of the
//! client's system text.

/// The marker a caller sets as its whole system prompt to get the task-agent flavour.
pub const TASK_AGENT_MARKER: &str = "opencode-task-agent";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Main,
    SearchAgent,
    TaskAgent,
}

impl Flavour {
    /// `system_texts` are the client's system messages in order. Search agent is tested first.
    pub fn detect<S: AsRef<str>>(system_texts: &[S], search_prompt: &str) -> Self {
        let search = search_prompt.trim_end();
        let texts: Vec<&str> = system_texts.iter().map(AsRef::as_ref).collect();
        // Joined only when there is more than one: the common single prompt is compared in place.
        let joined = (texts.len() > 1).then(|| texts.join("\n"));
        let matches = |wanted: &str| {
            joined.as_deref().is_some_and(|j| j.trim_end() == wanted)
                || texts.iter().any(|t| t.trim_end() == wanted)
        };
        if matches(search) {
            Self::SearchAgent
        } else if matches(TASK_AGENT_MARKER) {
            Self::TaskAgent
        } else {
            Self::Main
        }
    }

    /// The opencode tool names this flavour may send, in canonical order.
    pub fn allows(self, tool: &str) -> bool {
        match self {
            Self::Main => true,
            Self::SearchAgent => matches!(tool, "bash" | "glob" | "grep" | "read" | "webfetch"),
            Self::TaskAgent => !matches!(tool, "task" | "todowrite"),
        }
    }

    /// User text is JSON-quoted only for the main flavour.
    pub fn quotes_user_text(self) -> bool {
        self == Self::Main
    }

    pub fn has_skills(self) -> bool {
        self != Self::SearchAgent
    }

    pub fn has_temperature(self) -> bool {
        self != Self::TaskAgent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: &str = "You search files.\nCarefully.\n";

    #[test]
    fn detects_each_flavour_by_exact_text() {
        let detect = |texts: &[&str]| {
            Flavour::detect(
                &texts.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
                SEARCH,
            )
        };
        assert_eq!(
            detect(&["You search files.\nCarefully."]),
            Flavour::SearchAgent
        );
        assert_eq!(
            detect(&["You search files.\nCarefully.\n\n  "]),
            Flavour::SearchAgent
        );
        assert_eq!(detect(&["opencode-task-agent\n"]), Flavour::TaskAgent);
        assert_eq!(detect(&["  opencode-task-agent"]), Flavour::Main);
        assert_eq!(detect(&["You search files."]), Flavour::Main);
        assert_eq!(detect(&[]), Flavour::Main);
    }

    #[test]
    fn tool_subsets_follow_the_spec() {
        let all = [
            "bash",
            "edit",
            "glob",
            "grep",
            "read",
            "skill",
            "task",
            "todowrite",
            "webfetch",
            "write",
        ];
        let pick = |f: Flavour| {
            all.iter()
                .copied()
                .filter(|t| f.allows(t))
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(Flavour::Main), all);
        assert_eq!(
            pick(Flavour::SearchAgent),
            ["bash", "glob", "grep", "read", "webfetch"]
        );
        assert_eq!(
            pick(Flavour::TaskAgent),
            [
                "bash", "edit", "glob", "grep", "read", "skill", "webfetch", "write"
            ]
        );
    }
}
