//! Builder M (`minimal`; docs/harnesses.md): assistant text goes as it is (joined into the
//! content of the calls that follow it), user and developer messages go as user messages, every
//! output is sent (no awaited-id check), unanswered calls are sent at the end, and reasoning goes
//! back as `reasoning_content` on the next assistant message when there is any.

use serde_json::{Value, json};

use super::user_parts;
use crate::conversation::{Content, Item, Part, Role};

struct Builder {
    out: Vec<Value>,
    pending: Vec<Value>,
    texts: Vec<String>,
    reasoning: Option<String>,
}

pub fn build(items: &[Item]) -> Vec<Value> {
    let mut b = Builder {
        out: Vec::with_capacity(items.len()),
        pending: Vec::new(),
        texts: Vec::new(),
        reasoning: None,
    };
    for item in items {
        match item {
            Item::Message(message) => match message.role {
                Role::Assistant => {
                    let text = message.content.text();
                    // An assistant turn with nothing in it (a front's record of a Claude Code
                    // or Gemini turn that held only thinking and calls) is no message: its
                    // reasoning stays pending for the calls after it, as the model gave both.
                    if text.is_empty() && !has_parts(&message.content) {
                        continue;
                    }
                    if b.pending.is_empty() {
                        let mut m =
                            json!({"role": "assistant", "content": content(&message.content)});
                        if let Some(r) = b.reasoning.take() {
                            m["reasoning_content"] = json!(r);
                        }
                        b.out.push(m);
                    } else if !text.is_empty() {
                        b.texts.push(text.into_owned());
                    }
                }
                Role::User | Role::Developer => {
                    let parts = match message.role {
                        Role::User => user_parts(&message.content),
                        _ => Some(parts_of(&message.content)),
                    };
                    let Some(parts) = parts else { continue };
                    b.flush_calls();
                    b.out
                        .push(json!({"role": "user", "content": content(&Content::Parts(parts))}));
                }
                Role::System => {}
            },
            Item::ToolCall(call) => {
                b.pending.push(
                    json!({"type": "function", "id": call.id.clone().unwrap_or_default(),
                    "function": {"name": call.name, "arguments": call.input.as_arguments()}}),
                );
            }
            Item::ToolResult(result) => {
                b.flush_calls();
                b.out.push(json!({"role": "tool", "content": result.text(),
                    "tool_call_id": result.call_id.clone().unwrap_or_default()}));
            }
            Item::Reasoning(reasoning) => {
                if !reasoning.text.is_empty() {
                    b.reasoning = Some(reasoning.text.clone());
                }
            }
        }
    }
    b.flush_calls();
    b.out
}

impl Builder {
    fn flush_calls(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut m = json!({"role": "assistant", "content": self.texts.join("\n"),
            "tool_calls": std::mem::take(&mut self.pending)});
        self.texts.clear();
        if let Some(r) = self.reasoning.take() {
            m["reasoning_content"] = json!(r);
        }
        self.out.push(m);
    }
}

/// Whether `content` holds a part that is not text (an image, audio): such a turn is sent.
fn has_parts(content: &Content) -> bool {
    matches!(content, Content::Parts(parts) if parts.iter().any(|p| !matches!(p, Part::Text(_))))
}

fn parts_of(content: &Content) -> Vec<Part> {
    match content {
        Content::Text(text) => vec![Part::Text(text.clone())],
        Content::Parts(parts) => parts.clone(),
    }
}

/// Text as a string, parts as parts (images with their `detail`, audio as a note).
fn content(content: &Content) -> Value {
    let parts = match content {
        Content::Text(text) => return json!(text),
        Content::Parts(parts) => parts,
    };
    if let [Part::Text(text)] = parts.as_slice() {
        return json!(text);
    }
    Value::Array(
        parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => json!({"type": "text", "text": text}),
                Part::Image(image) => {
                    let mut url = json!({"url": image.url});
                    if let Some(detail) = &image.detail {
                        url["detail"] = json!(detail);
                    }
                    json!({"type": "image_url", "image_url": url})
                }
                Part::Other(_) => json!({"type": "text", "text": "[audio content omitted]"}),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;

    /// docs/harnesses.md: developer messages are preserved as user messages.
    #[test]
    fn developer_messages_go_as_user_messages() {
        let items = vec![
            Item::Message(Message::text(Role::Developer, "be brief")),
            Item::Message(Message::text(Role::User, "hi")),
        ];
        assert_eq!(
            Value::Array(build(&items)),
            json!([{"role":"user","content":"be brief"},{"role":"user","content":"hi"}])
        );
    }

    /// Found with real Claude Code and Gemini CLI through claude-code on a Chat upstream: their
    /// echoed turn (thinking, then a call) reached the builder with an empty assistant message
    /// between, which went up as a message of its own holding the reasoning, apart from the calls
    /// it was the reasoning of.
    #[test]
    fn an_empty_assistant_turn_leaves_its_reasoning_to_the_calls_after_it() {
        use crate::conversation::{CallInput, Reasoning, ToolCall, ToolResult};
        let items = vec![
            Item::Message(Message::text(Role::User, "go")),
            Item::Reasoning(Reasoning {
                text: "thinking".into(),
                ..Reasoning::default()
            }),
            Item::Message(Message::text(Role::Assistant, "")),
            Item::ToolCall(ToolCall {
                id: Some("c1".into()),
                name: "Bash".into(),
                input: CallInput::Arguments("{}".into()),
            }),
            Item::ToolResult(ToolResult {
                call_id: Some("c1".into()),
                content: Content::Text("ok".into()),
                is_error: false,
            }),
        ];
        assert_eq!(
            Value::Array(build(&items)),
            json!([
                {"role":"user","content":"go"},
                {"role":"assistant","content":"","reasoning_content":"thinking",
                 "tool_calls":[{"type":"function","id":"c1","function":{"name":"Bash","arguments":"{}"}}]},
                {"role":"tool","content":"ok","tool_call_id":"c1"}
            ])
        );
    }
}
