//! Builder K (`kimi-cli`, `qwen-code`: K-cli; `kimi-code`: K-code; `deepseek-tui`: K-ds;
//! docs/harnesses.md): one pass with pending calls, awaited ids, held assistant text `A` and
//! pending reasoning `R`, its variants chosen by `Options`. Content keeps its parts (a single text
//! part collapses to a string); developer messages are not emitted (the harness puts developer
//! text in its system prompt); calls still unanswered at a user turn or at the end are dropped.
//!
//! Where the reference loses something, `keep` keeps it: the reasoning of a turn that answered in
//! text goes with that text.

use serde_json::{Map, Value, json};

use super::{output_text, user_parts};
use crate::conversation::{Content, Item, Part, Role, ToolResult};

/// The variant of builder K.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// A reasoning item with no text contributes this (K-ds: `(reasoning omitted)`).
    pub empty_reasoning: Option<&'static str>,
    /// Tool-call arguments re-serialised without whitespace, keys in order (K-code, K-ds).
    pub compact_arguments: bool,
    /// Assistant text is held to become the content of the calls that follow (K-ds).
    pub merge_text: bool,
    /// Every assistant message carries `reasoning_content`, `""` when none (K-code).
    pub reasoning_always: bool,
    /// What a blank tool output says.
    pub blank_output: &'static str,
    /// Trailing newlines are trimmed from user text (K-cli, K-ds).
    pub trim_user_newlines: bool,
    /// Every `:` of a call id becomes `_` (K-code).
    pub underscore_ids: bool,
    /// Keep what the reference loses (the default history).
    pub keep: bool,
}

/// Kimi's text for a blank tool output.
pub const KIMI_BLANK: &str = "<system>Tool output is empty.</system>";

struct Builder {
    options: Options,
    out: Vec<Value>,
    pending: Vec<Value>,
    awaiting: Vec<String>,
    held: Option<Value>,
    reasoning: Option<String>,
}

pub fn build(items: &[Item], options: Options) -> Vec<Value> {
    let mut b = Builder {
        options,
        out: Vec::with_capacity(items.len()),
        pending: Vec::new(),
        awaiting: Vec::new(),
        held: None,
        reasoning: None,
    };
    for item in items {
        match item {
            Item::Message(message) => match message.role {
                Role::Assistant => b.assistant(&message.content),
                Role::User => {
                    let Some(parts) = user_parts(&message.content) else {
                        continue;
                    };
                    b.clear();
                    b.emit_held();
                    if let Some(content) = content(&parts, options.trim_user_newlines) {
                        b.out.push(json!({"role": "user", "content": content}));
                    }
                }
                Role::Developer => {
                    b.clear();
                    b.emit_held();
                }
                Role::System => {}
            },
            Item::ToolCall(call) => {
                if !options.merge_text {
                    b.emit_held();
                }
                b.awaiting.clear();
                let id = b.id(call.id.as_deref().unwrap_or_default());
                let arguments = call.input.as_arguments();
                let arguments = if options.compact_arguments {
                    compact(&arguments)
                } else {
                    arguments.into_owned()
                };
                b.pending.push(json!({"type": "function", "id": id,
                    "function": {"name": call.name, "arguments": arguments}}));
            }
            Item::ToolResult(result) => b.output(result),
            Item::Reasoning(reasoning) => {
                let text = if reasoning.text.is_empty() {
                    options.empty_reasoning.unwrap_or_default()
                } else {
                    &reasoning.text
                };
                if !text.is_empty() {
                    b.reasoning.get_or_insert_with(String::new).push_str(text);
                }
            }
        }
    }
    b.emit_held();
    b.out
}

impl Builder {
    fn id(&self, id: &str) -> String {
        if self.options.underscore_ids {
            id.replace(':', "_")
        } else {
            id.to_owned()
        }
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.awaiting.clear();
        self.reasoning = None;
    }

    fn emit_held(&mut self) {
        if let Some(message) = self.held.take() {
            self.out.push(message);
        }
    }

    fn assistant(&mut self, content: &Content) {
        let Some(content) = assistant_content(content) else {
            return;
        };
        if !self.pending.is_empty() {
            // Text after calls in one turn: the calls' message carries it.
            self.held = Some(json!({"role": "assistant", "content": content}));
            return;
        }
        let reasoning = self.reasoning.take().filter(|_| self.options.keep);
        self.pending.clear();
        self.awaiting.clear();
        self.emit_held();
        let mut message = json!({"role": "assistant", "content": content});
        self.add_reasoning(&mut message, reasoning);
        if self.options.merge_text {
            self.held = Some(message);
        } else {
            self.out.push(message);
        }
    }

    fn add_reasoning(&self, message: &mut Value, reasoning: Option<String>) {
        match reasoning {
            Some(text) if !text.is_empty() => message["reasoning_content"] = json!(text),
            _ if self.options.reasoning_always => message["reasoning_content"] = json!(""),
            _ => {}
        }
    }

    fn output(&mut self, result: &ToolResult) {
        if !self.pending.is_empty() {
            let calls = std::mem::take(&mut self.pending);
            self.awaiting.extend(
                calls
                    .iter()
                    .filter_map(|c| c["id"].as_str().map(str::to_owned)),
            );
            let held = self.held.take();
            let mut message = match &held {
                Some(held) => {
                    json!({"role": "assistant", "content": held["content"], "tool_calls": calls})
                }
                None => json!({"role": "assistant", "tool_calls": calls}),
            };
            // Merged text brings the reasoning kept with it.
            let held_reasoning = held
                .as_ref()
                .and_then(|h| h.get("reasoning_content"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let reasoning = self.reasoning.take().or(held_reasoning);
            self.add_reasoning(&mut message, reasoning);
            self.out.push(message);
        } else {
            // Text held with no calls to carry it is dropped (the reference's rule).
            self.held = None;
        }
        let Some(id) = result.call_id.as_deref().map(|id| self.id(id)) else {
            return;
        };
        if let Some(at) = self.awaiting.iter().position(|a| *a == id) {
            self.awaiting.remove(at);
            let content = tool_content(result, self.options.blank_output);
            self.out
                .push(json!({"role": "tool", "content": content, "tool_call_id": id}));
        }
    }
}

/// An assistant message's content: its text (`None` when empty).
fn assistant_content(content: &Content) -> Option<Value> {
    let text = content.text();
    (!text.is_empty()).then(|| Value::String(text.into_owned()))
}

/// A user message's content: its parts, a single text part collapsed to a string; `None` when it
/// has none.
fn content(parts: &[Part], trim: bool) -> Option<Value> {
    let mut out: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => {
                let text = if trim {
                    text.trim_end_matches('\n')
                } else {
                    text
                };
                Some(json!({"type": "text", "text": text}))
            }
            Part::Image(image) => {
                Some(json!({"type": "image_url", "image_url": {"url": image.url, "id": null}}))
            }
            Part::Other(_) => None,
        })
        .collect();
    match out.as_slice() {
        [] => None,
        [one] if one["type"] == "text" => Some(one["text"].clone()),
        _ => Some(Value::Array(std::mem::take(&mut out))),
    }
}

/// A tool message's content (docs/harnesses.md, K): a failure wrapped as an error, a blank output
/// said so, an output with NUL bytes said to be no text.
fn tool_content(result: &ToolResult, blank: &str) -> String {
    let (text, appended) = output_text(result);
    let content = output_content(result, text, blank);
    content + &appended
}

fn output_content(result: &ToolResult, text: String, blank: &str) -> String {
    const SYSTEM_TEXTS: [&str; 2] = [
        KIMI_BLANK,
        "<system>Tool returned non-text content.</system>",
    ];
    if result.is_error
        && !text.starts_with("<system>ERROR:")
        && !text.starts_with("<system>Command executed successfully.")
        && !SYSTEM_TEXTS.contains(&text.as_str())
    {
        return format!("<system>ERROR: {text}</system>");
    }
    if text.trim().is_empty() {
        blank.to_owned()
    } else if text.contains('\0') {
        SYSTEM_TEXTS[1].to_owned()
    } else {
        text
    }
}

/// Arguments without whitespace outside strings, keys in their order; text that is not JSON as
/// it is.
fn compact(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .map_or_else(|_| arguments.to_owned(), |v| v.to_string())
}

/// The reference's K-ds fill-in: every assistant message with calls and no reasoning gets
/// `(reasoning omitted)`, and `""` as its content when it has none.
pub fn fill_reasoning(messages: &mut [Value], fill: &str) {
    for message in messages {
        let Some(object) = message.as_object_mut() else {
            continue;
        };
        if object.get("role") != Some(&json!("assistant")) || !object.contains_key("tool_calls") {
            continue;
        }
        if !object.contains_key("reasoning_content") {
            object.insert("reasoning_content".into(), json!(fill));
        }
        if !object.contains_key("content") {
            // `content` goes first, as the reference writes it.
            let rest: Map<String, Value> = std::mem::take(object);
            object.insert("role".into(), json!("assistant"));
            object.insert("content".into(), json!(""));
            object.extend(rest.into_iter().filter(|(k, _)| k != "role"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Message, Reasoning, ToolCall};

    fn cli() -> Options {
        Options {
            empty_reasoning: None,
            compact_arguments: false,
            merge_text: false,
            reasoning_always: false,
            blank_output: KIMI_BLANK,
            trim_user_newlines: true,
            underscore_ids: false,
            keep: false,
        }
    }

    /// docs/harnesses.md, the derived skeleton: user `fix bug\n`, reasoning `r`, call `Shell`
    /// `c1` with `{"command": "ls"}`, output `ok`.
    #[test]
    fn the_kimi_cli_skeleton() {
        let items = vec![
            Item::Message(Message::text(Role::User, "fix bug\n")),
            Item::Reasoning(Reasoning {
                text: "r".into(),
                ..Reasoning::default()
            }),
            Item::ToolCall(ToolCall {
                id: Some("c1".into()),
                name: "Shell".into(),
                input: CallInput::Arguments(r#"{"command": "ls"}"#.into()),
            }),
            Item::ToolResult(ToolResult {
                call_id: Some("c1".into()),
                content: Content::Text("ok".into()),
                is_error: false,
            }),
        ];
        assert_eq!(
            Value::Array(build(&items, cli())),
            json!([
                {"role":"user","content":"fix bug"},
                {"role":"assistant","tool_calls":[{"type":"function","id":"c1","function":{"name":"Shell","arguments":"{\"command\": \"ls\"}"}}],"reasoning_content":"r"},
                {"role":"tool","content":"ok","tool_call_id":"c1"}
            ])
        );
    }

    #[test]
    fn unanswered_calls_are_dropped_and_failures_and_blanks_are_worded() {
        let items = vec![
            Item::Message(Message::text(Role::User, "go")),
            Item::ToolCall(ToolCall {
                id: Some("a:1".into()),
                name: "Bash".into(),
                input: CallInput::Arguments("{ \"command\" : \"false\" }".into()),
            }),
            Item::ToolResult(ToolResult {
                call_id: Some("a:1".into()),
                content: Content::Text("boom".into()),
                is_error: true,
            }),
            Item::ToolCall(ToolCall {
                id: Some("b".into()),
                name: "Bash".into(),
                input: CallInput::Arguments("{}".into()),
            }),
        ];
        let code = Options {
            compact_arguments: true,
            reasoning_always: true,
            trim_user_newlines: false,
            underscore_ids: true,
            ..cli()
        };
        let out = build(&items, code);
        assert_eq!(out.len(), 3, "the unanswered call is dropped: {out:?}");
        assert_eq!(out[1]["tool_calls"][0]["id"], "a_1");
        assert_eq!(
            out[1]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"false"}"#
        );
        assert_eq!(out[1]["reasoning_content"], "");
        assert_eq!(
            out[2],
            json!({"role":"tool","content":"<system>ERROR: boom</system>","tool_call_id":"a_1"})
        );
    }

    /// Claude Code appends its token budget to a result the proxy rewords to `(no output)`: the
    /// harness's own blank text, then what was appended (the run of issue 31 found it sent as
    /// `(no output)` with the reminder).
    #[test]
    fn a_blank_output_with_an_appended_reminder_is_the_harness_s_blank_text() {
        let reminder =
            "\n\n<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>";
        let result = ToolResult {
            call_id: Some("c".into()),
            content: Content::Text(format!("(no output){reminder}")),
            is_error: false,
        };
        assert_eq!(
            tool_content(&result, KIMI_BLANK),
            format!("{KIMI_BLANK}{reminder}")
        );
    }

    #[test]
    fn deepseek_fills_in_omitted_reasoning_content_first() {
        let mut messages = vec![json!({"role":"assistant","tool_calls":[]})];
        fill_reasoning(&mut messages, "(reasoning omitted)");
        assert_eq!(
            serde_json::to_string(&messages[0]).expect("a JSON value"),
            r#"{"role":"assistant","content":"","tool_calls":[],"reasoning_content":"(reasoning omitted)"}"#
        );
    }
}
