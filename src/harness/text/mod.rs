//! What the reference's text-protocol harnesses share (`mini-swe-agent`, `swe-agent`,
//! `terminus-2`; docs/harnesses.md): the model answers in text (or, mini-swe-agent, must call its
//! one tool), and the proxy turns the action into a call of the client's own tool. Here: the
//! shell the client must offer (these harnesses exist to run commands: a request without one is
//! refused in the client's protocol), a shell action as candidate calls of the harness's shell
//! tool, a message's text as these harnesses read it (text parts joined by `\n`, context parts
//! left out), a result's structured `output`, and the prepared request with its `ActionReader`.
//!
//! Pure and synchronous, as every harness.

use std::sync::Arc;

use serde_json::{Value, json};

use super::family::ToolSet;
use super::{HarnessError, Prepared};
use crate::clients::bridge::{Binding, Bridge};
use crate::clients::capability::Capability;
use crate::clients::contextual;
use crate::conversation::action::{ActionReader, HarnessCall};
use crate::conversation::mapping::{CallMapper, Reshape, ResponsePlan};
use crate::conversation::{Content, Conversation};

/// The harness tool the client's shell maps to; a request whose tools have none is refused:
/// there is nothing these harnesses' actions could run on.
pub fn require_shell(
    bridge: &Bridge,
    tools: &ToolSet,
    harness: &str,
) -> Result<String, HarnessError> {
    let shell = tools
        .harness_tools()
        .for_capability(Capability::Shell)
        .map(|tool| tool.name.clone());
    let mapped = shell.as_deref().is_some_and(|name| {
        bridge.tools.iter().any(|tool| {
            matches!(&tool.binding, Binding::Mapped { harness, .. } if harness.iter().any(|h| h == name))
        })
    });
    match shell {
        Some(name) if mapped => Ok(name),
        _ => {
            let offered: Vec<&str> = bridge.tools.iter().map(|t| t.name.as_str()).collect();
            Err(HarnessError::Invalid {
                message: format!(
                    "the {harness} harness runs the model's commands through the client's shell tool, and this request offers none (its tools: {}); offer a shell tool (bash, exec_command, run_shell_command, …) or pick another harness",
                    if offered.is_empty() {
                        "none".to_owned()
                    } else {
                        offered.join(", ")
                    }
                ),
                param: Some("tools"),
                code: "no_shell_tool",
            })
        }
    }
}

/// A shell action as calls of the harness's shell tool, in the neutral shell form, best first:
/// with its timeout (milliseconds), then without for a client whose shell has no slot for one.
/// The label (`description`, which a client without that slot goes without) is the command's
/// first line.
pub fn shell_calls(tool: &str, command: &str, timeout_ms: Option<u64>) -> Vec<HarnessCall> {
    let label: String = command
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .chars()
        .take(80)
        .collect();
    let mut calls = Vec::with_capacity(2);
    if let Some(timeout) = timeout_ms {
        calls.push(call(
            tool,
            &json!({"command": command, "timeout": timeout, "description": label}),
        ));
    }
    calls.push(call(
        tool,
        &json!({"command": command, "description": label}),
    ));
    calls
}

/// One call of a harness tool.
pub fn call(tool: &str, arguments: &Value) -> HarnessCall {
    HarnessCall {
        name: tool.to_owned(),
        arguments: arguments.to_string(),
    }
}

/// A message's text as these harnesses read it: its text parts joined by `\n`.
pub fn joined(content: &Content) -> String {
    content.text_parts().join("\n")
}

/// A user message's own words (its context parts left out, the rest joined by `\n`); `None` for
/// context alone or no text.
pub fn user_text(content: &Content) -> Option<String> {
    let parts = content.text_parts();
    if contextual::is_context_only(parts.iter().copied()) {
        return None;
    }
    let words: Vec<&str> = parts
        .into_iter()
        .filter(|part| !contextual::is_contextual_text(part))
        .collect();
    let text = words.join("\n");
    (!text.is_empty()).then_some(text)
}

/// The starts of the developer texts an agent's runtime writes for itself (its permissions,
/// skills, plugins, modes, budgets): a developer message of these alone is not sent as the user's.
const DEVELOPER_FRAGMENTS: [&str; 16] = [
    "<permissions instructions>",
    "<model_switch>",
    "<apps_instructions>",
    "<collaboration_mode>",
    "<multi_agent_role>",
    "<multi_agent_mode>",
    "<environments_instructions>",
    "<git_attribution>",
    "<plugins_instructions>",
    "<realtime_conversation>",
    "<skills_instructions>",
    "<tools>",
    "<personality_spec>",
    "<token_budget>",
    "<rollout_budget>",
    "<context_window",
];

/// Whether a developer text is one of the runtime's own fragments (its start after leading
/// whitespace, compared without ASCII case).
pub fn is_developer_fragment(text: &str) -> bool {
    let text = text.trim_start().as_bytes();
    DEVELOPER_FRAGMENTS.iter().any(|start| {
        text.get(..start.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(start.as_bytes()))
    })
}

/// A tool result's output as these harnesses show it to the model: the text, blank for the
/// neutral "(no output)", without the `<system-reminder>` blocks an agent appends to it for its own
/// model (Claude Code's token budget): an observation is what the command printed.
pub fn output(result: &crate::conversation::ToolResult) -> String {
    let (mut text, _) = super::family::output_text(result);
    while let Some(body) = text.trim_end().strip_suffix("</system-reminder>") {
        let Some(at) = body.rfind("<system-reminder>") else {
            break;
        };
        let kept = body[..at].trim_end_matches(['\n', ' ']).len();
        // Only a block the agent appended after the output (a blank line before it).
        if !body[..at].ends_with("\n\n") && kept != 0 {
            break;
        }
        text.truncate(kept);
        if kept > 0 {
            text.push('\n');
        }
    }
    text
}

/// A tool result that is the runtime's structured shell result (`{"output": …, "metadata":
/// {"exit_code": …}}`): its output and exit code.
pub fn structured_output(text: &str) -> Option<(String, Option<i64>)> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(trimmed).ok()?;
    let output = value.get("output")?.as_str()?.to_owned();
    let exit = value.pointer("/metadata/exit_code").and_then(Value::as_i64);
    Some((output, exit))
}

/// The prepared request of a text-protocol harness: `body` upstream, the answer held whole and
/// read by `reader`, its action delivered through the bridge.
pub fn prepared(
    body: &Value,
    bridge: Bridge,
    conversation: &Conversation,
    reader: Arc<dyn ActionReader>,
) -> Result<Prepared, HarnessError> {
    let dropped_tools = bridge.dropped();
    let passthrough_tools = bridge.kept();
    Ok(Prepared {
        upstream_body: crate::harness::sized(
            serde_json::to_vec(body).map_err(HarnessError::Encode)?,
        )
        .into(),
        rewritten: true,
        response: ResponsePlan::Reshape(Reshape {
            client_stream: conversation.options.stream,
            include_usage: conversation.options.include_usage,
            calls: Some(Arc::new(bridge) as Arc<dyn CallMapper>),
            actions: Some(reader),
        }),
        dropped_tools,
        passthrough_tools,
        subagent: false,
        local: None,
    })
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The last `max` bytes of `text` or fewer, starting on a character boundary.
pub fn clip_start(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_fall_on_character_boundaries() {
        let text = "aé€b";
        assert_eq!(clip(text, 2), "a");
        assert_eq!(clip(text, 3), "aé");
        assert_eq!(clip_start(text, 2), "b");
        assert_eq!(clip_start(text, 4), "€b");
        assert_eq!(clip(text, 100), text);
    }

    #[test]
    fn a_shell_action_is_offered_with_its_timeout_then_without() {
        let calls = shell_calls("bash", "ls\npwd", Some(30_000));
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0].arguments,
            r#"{"command":"ls\npwd","timeout":30000,"description":"ls"}"#
        );
        assert_eq!(
            calls[1].arguments,
            r#"{"command":"ls\npwd","description":"ls"}"#
        );
    }

    #[test]
    fn an_appended_reminder_is_not_output() {
        use crate::conversation::{Content, ToolResult};
        let result = |text: &str| ToolResult {
            call_id: None,
            content: Content::Text(text.to_owned()),
            is_error: false,
        };
        let reminder =
            "<system-reminder>\n<total_tokens>9 tokens left</total_tokens>\n</system-reminder>";
        assert_eq!(output(&result(&format!("hi\n\n{reminder}"))), "hi\n");
        assert_eq!(output(&result(&format!("(no output)\n\n{reminder}"))), "");
        assert_eq!(
            output(&result(&format!("a{reminder}"))),
            format!("a{reminder}")
        );
        assert_eq!(output(&result("plain\n")), "plain\n");
    }

    #[test]
    fn the_runtime_s_structured_output_is_read() {
        assert_eq!(
            structured_output(r#"{"output":"hello\n","metadata":{"exit_code":0}}"#),
            Some(("hello\n".to_owned(), Some(0)))
        );
        assert_eq!(structured_output("hello"), None);
        assert_eq!(structured_output(r#"{"other":1}"#), None);
    }
}
