//! Builder P (`pi`, `little-coder`; docs/harnesses.md): one left-to-right pass over the client's
//! items (already in the harness's tools, `family::translate`) with pending calls, awaited ids,
//! pending assistant text `A` and pending reasoning `R`. User text goes raw as a one-part array;
//! developer messages are ignored; every assistant message carries `reasoning_content` (`""` when
//! none); a tool-call message's content is `null` when it has no text.
//!
//! Where the reference loses something, `keep` (the default history) keeps it: a plain answer
//! before the next user turn is sent as its own assistant message, and a user message's images go
//! as `image_url` parts after its text. `keep = false` is the reference exactly.

use serde_json::{Map, Value, json};

use super::{NO_TRUNCATE_MARKER, text_of, user_parts};
use crate::conversation::{Item, Part, Role};

struct Builder {
    keep: bool,
    out: Vec<Value>,
    pending: Vec<Value>,
    awaiting: Vec<String>,
    text: Option<String>,
    reasoning: Option<String>,
}

pub fn build(items: &[Item], keep: bool) -> Vec<Value> {
    let mut b = Builder {
        keep,
        out: Vec::with_capacity(items.len()),
        pending: Vec::new(),
        awaiting: Vec::new(),
        text: None,
        reasoning: None,
    };
    for item in items {
        match item {
            Item::Message(message) => match message.role {
                Role::Assistant => {
                    let text = message.content.text();
                    if !text.is_empty() {
                        if b.keep && b.pending.is_empty() {
                            b.flush_text();
                        }
                        b.text = Some(text.into_owned());
                    }
                }
                Role::User => {
                    let Some(parts) = user_parts(&message.content) else {
                        continue;
                    };
                    if b.keep {
                        b.flush_text();
                    }
                    b.pending.clear();
                    b.awaiting.clear();
                    b.text = None;
                    b.reasoning = None;
                    b.out
                        .push(json!({"role": "user", "content": content(&parts, keep)}));
                }
                Role::Developer | Role::System => {}
            },
            Item::ToolCall(call) => {
                let id = call.id.clone().unwrap_or_default();
                b.pending.push(json!({"id": id, "type": "function", "function": {
                    "name": call.name, "arguments": compact(&call.name, &call.input.as_arguments())}}));
            }
            Item::ToolResult(result) => {
                b.flush_calls();
                let Some(id) = result.call_id.as_deref() else {
                    continue;
                };
                if let Some(at) = b.awaiting.iter().position(|a| a == id) {
                    b.awaiting.remove(at);
                    let text = result.text();
                    let text = text.strip_prefix(NO_TRUNCATE_MARKER).unwrap_or(&text);
                    b.out
                        .push(json!({"role": "tool", "content": text, "tool_call_id": id}));
                }
            }
            Item::Reasoning(reasoning) => {
                if !reasoning.text.is_empty() {
                    b.reasoning = Some(reasoning.text.clone());
                }
            }
        }
    }
    // Unanswered calls are sent, as the reference sends them.
    b.flush_calls();
    if b.text.is_some() || b.reasoning.is_some() {
        b.out.push(json!({"role": "assistant",
            "content": b.text.take().unwrap_or_default(),
            "reasoning_content": b.reasoning.take().unwrap_or_default()}));
    }
    b.out
}

impl Builder {
    fn flush_calls(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.pending);
        self.awaiting.extend(
            calls
                .iter()
                .filter_map(|c| c["id"].as_str().map(str::to_owned)),
        );
        self.out.push(json!({"role": "assistant",
            "content": self.text.take(),
            "reasoning_content": self.reasoning.take().unwrap_or_default(),
            "tool_calls": calls}));
    }

    /// A plain answer the reference would lose, as its own message (keep mode).
    fn flush_text(&mut self) {
        if let Some(text) = self.text.take() {
            self.out.push(json!({"role": "assistant", "content": text,
                "reasoning_content": self.reasoning.take().unwrap_or_default()}));
        }
    }
}

/// The user's content: always a one-element text array (even when empty), images after it when
/// kept.
fn content(parts: &[Part], keep: bool) -> Value {
    let mut out = vec![json!({"type": "text", "text": text_of(parts)})];
    if keep {
        out.extend(parts.iter().filter_map(|part| match part {
            Part::Image(image) => {
                Some(json!({"type": "image_url", "image_url": {"url": image.url}}))
            }
            Part::Text(_) | Part::Other(_) => None,
        }));
    }
    Value::Array(out)
}

/// pi's argument compaction: its four tools keep only their own keys, in their order; any other
/// tool's arguments are re-serialised compactly; text that is not JSON goes as it is.
pub fn compact(name: &str, arguments: &str) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return match serde_json::from_str::<Value>(arguments) {
            Ok(value) => value.to_string(),
            Err(_) => arguments.to_owned(),
        };
    };
    let keys: &[&str] = match name {
        "read" => &["path", "offset", "limit"],
        "bash" => &["command", "timeout"],
        "write" => &["path", "content"],
        "edit" => return edit(&args).to_string(),
        _ => return Value::Object(args).to_string(),
    };
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = args.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    Value::Object(out).to_string()
}

fn edit(args: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    if let Some(path) = args.get("path") {
        out.insert("path".into(), path.clone());
    }
    if let Some(Value::Array(edits)) = args.get("edits") {
        let edits: Vec<Value> = edits
            .iter()
            .map(|e| {
                let mut one = Map::new();
                for key in ["oldText", "newText"] {
                    if let Some(v) = e.get(key) {
                        one.insert(key.into(), v.clone());
                    }
                }
                Value::Object(one)
            })
            .collect();
        out.insert("edits".into(), Value::Array(edits));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Content, Message, ToolCall, ToolResult};

    /// docs/harnesses.md, the derived test vector.
    #[test]
    fn the_pi_vector() {
        let items = vec![
            Item::Message(Message::text(Role::User, "List files")),
            Item::ToolCall(ToolCall {
                id: Some("c1".into()),
                name: "bash".into(),
                input: CallInput::Arguments(r#"{"command":"ls","extra":1}"#.into()),
            }),
            Item::ToolResult(ToolResult {
                call_id: Some("c1".into()),
                content: Content::Text("a.txt\n".into()),
                is_error: false,
            }),
            Item::Message(Message::text(Role::Assistant, "Done.")),
        ];
        let expected = json!([
            {"role":"user","content":[{"type":"text","text":"List files"}]},
            {"role":"assistant","content":null,"reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
            {"role":"tool","content":"a.txt\n","tool_call_id":"c1"},
            {"role":"assistant","content":"Done.","reasoning_content":""}
        ]);
        assert_eq!(Value::Array(build(&items, false)), expected);
        assert_eq!(Value::Array(build(&items, true)), expected);
    }

    #[test]
    fn a_plain_answer_before_the_next_turn_is_lost_only_in_the_reference() {
        let items = vec![
            Item::Message(Message::text(Role::User, "hi")),
            Item::Message(Message::text(Role::Assistant, "hello")),
            Item::Message(Message::text(Role::User, "again")),
        ];
        assert_eq!(build(&items, false).len(), 2);
        let kept = build(&items, true);
        assert_eq!(
            kept[1],
            json!({"role":"assistant","content":"hello","reasoning_content":""})
        );
    }
}
