//! Claude Code's child form (docs/harnesses.md, "claude-code"): what a request of a sub-agent the
//! client spawned becomes, on either profile. The child has a prompt of its own (a sub-agent's
//! opening and an `<env>` block), no thinking, the model's default effort and `temperature: 1`,
//! no developer text, no todo reminders, and none of the tools that only make sense where a
//! user is watching (asking questions, plan mode) or that wait on other tasks. Pure.

use serde_json::Value;

/// The tools a child is never offered: it cannot ask the user, plan with them or read another
/// task's output.
const DROPPED: [&str; 4] = [
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "TaskOutput",
];

/// Whether a child is offered `tool` (a Chat Completions function).
pub fn offers(tool: &Value) -> bool {
    tool["function"]["name"]
        .as_str()
        .is_none_or(|name| !DROPPED.contains(&name))
}

/// The `<env>` block's git answer. The request cannot say whether the directory is a git
/// repository, so the child says no, as the main form's environment says `false`.
pub const GIT: &str = "No";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_child_keeps_every_tool_but_the_four_that_need_a_user_or_another_task() {
        let tool = |name: &str| json!({"type": "function", "function": {"name": name}});
        for name in DROPPED {
            assert!(!offers(&tool(name)), "{name}");
        }
        for name in ["Bash", "Read", "Agent", "TaskCreate", "my_mcp_tool"] {
            assert!(offers(&tool(name)), "{name}");
        }
    }
}
