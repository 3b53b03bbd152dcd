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
}
