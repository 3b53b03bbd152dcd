//! Claude Code's messages on the Messages wire (docs/harnesses.md; the spec's claude-code messages): the
//! conversation's items (already in the harness's tools) as Anthropic blocks, consecutive blocks
//! of one role merged into one message, tool results after their calls in the calls' order; then
//! the date reminder first in the first user message, one cache breakpoint on the last text or
//! tool result, and a lone uncached text as a plain string.
//!
//! Pure: the date and the reminder's words come in.

use serde_json::{Map, Value, json};

use crate::conversation::{Content, Image, Item, Part, Reasoning, Role, ToolCall, ToolResult};
use crate::harness::family::{output_text, user_parts};

/// One message being built: its role and its blocks.
struct Message {
    role: &'static str,
    blocks: Vec<Value>,
}

#[derive(Default)]
struct Builder {
    out: Vec<Message>,
    /// Results waiting for the next item that is not one: (the call's position, its block).
    pending: Vec<(usize, Value)>,
    /// Every call so far: its id and tool, in the order made.
    calls: Vec<(String, String)>,
}

/// What a developer message's `<skills_instructions>` block becomes (every other developer text
/// is the client's runtime's, not the agent's, and is dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skills {
    /// Claude Code's skills reminder listing each skill (`- name: description`).
    Listed,
    /// The block as it came (claude-code-bare).
    Raw,
    /// Dropped (ZCode lists its built-in skills itself).
    Dropped,
}

/// The opening of Claude Code's skills reminder, which the date reminder follows.
const SKILLS_OPENING: &str =
    "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n";

/// The messages of `items`, the date reminder (`reminder`, whole) put first in the first user
/// message (after the skills reminder when that opens it).
pub fn build(items: &[Item], reminder: &str, skills: Skills) -> Vec<Value> {
    let mut b = Builder::default();
    for item in items {
        if !matches!(item, Item::ToolResult(_)) {
            b.flush();
        }
        match item {
            Item::Message(message) => match message.role {
                Role::User => {
                    if let Some(parts) = user_parts(&message.content) {
                        let blocks = parts.iter().filter_map(part_block).collect();
                        b.push("user", blocks);
                    }
                }
                Role::Assistant => {
                    let blocks = match &message.content {
                        Content::Text(text) => text_block(text).into_iter().collect(),
                        Content::Parts(parts) => parts.iter().filter_map(part_block).collect(),
                    };
                    b.push("assistant", blocks);
                }
                Role::Developer => {
                    let text = message.content.text();
                    if let Some(block) = skills_block(&text, skills) {
                        b.push("user", vec![json!({"type": "text", "text": block})]);
                    }
                }
                // The harness's system text replaces the client's.
                Role::System => {}
            },
            Item::Reasoning(reasoning) => b.push("assistant", thinking(reasoning)),
            Item::ToolCall(call) => {
                let block = tool_use(call, b.calls.len());
                b.calls.push((
                    block["id"].as_str().unwrap_or("").to_owned(),
                    call.name.clone(),
                ));
                b.push("assistant", vec![block]);
            }
            Item::ToolResult(result) => b.result(result),
        }
    }
    b.flush();
    let mut messages = b.out;
    remind(&mut messages, reminder);
    mark_breakpoint(&mut messages);
    messages.into_iter().map(finish).collect()
}

impl Builder {
    /// Blocks of `role`, merged into the last message when it has that role.
    fn push(&mut self, role: &'static str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        match self.out.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => self.out.push(Message { role, blocks }),
        }
    }

    fn result(&mut self, result: &ToolResult) {
        let id = result.call_id.clone().unwrap_or_default();
        let position = self.calls.iter().position(|(call, _)| *call == id);
        let tool = position.map_or("", |p| self.calls[p].1.as_str());
        let (output, appended) = output_text(result);
        let mut text = format!("{output}{appended}");
        if tool == "Bash" {
            text = text.trim().to_owned();
        } else if tool == "TodoWrite" {
            text = text.trim_end_matches('\n').to_owned();
        }
        if result.is_error && !text.starts_with("<tool_use_error>") {
            text = format!("<tool_use_error>{text}</tool_use_error>");
        }
        let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": text});
        if result.is_error {
            block["is_error"] = json!(true);
        } else if tool == "Bash" {
            block["is_error"] = json!(false);
        }
        self.pending.push((position.unwrap_or(usize::MAX), block));
    }

    /// Waiting results as one user message, in the order of their calls.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|(position, _)| *position);
        self.push("user", pending.into_iter().map(|(_, b)| b).collect());
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn part_block(part: &Part) -> Option<Value> {
    match part {
        Part::Text(text) => text_block(text),
        Part::Image(image) => Some(image_block(image)),
        Part::Other(_) => Some(json!({"type": "text",
            "text": "[audio omitted by claude-code harness]"})),
    }
}

/// An inline image as Anthropic's base64 source; one given by URL as its URL source.
fn image_block(image: &Image) -> Value {
    let inline = image
        .url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    match inline {
        Some((media, data)) => json!({"type": "image",
            "source": {"type": "base64", "media_type": media, "data": data}}),
        None => json!({"type": "image", "source": {"type": "url", "url": image.url}}),
    }
}

/// The client's thinking with the server's own signature of it, which a server checks: the one
/// the proxy's seal or memo carried back (`conversation::seal`, `memory::reasoning_memo`), else
/// the signature the client echoed (its own opaque field: a server's, when the history did not
/// come through the proxy; the proxy's seal, when the server sent none, which a server that does
/// not check accepts). Then the server's redacted thinking, each block as it came, in order. A
/// reasoning that is only redacted thinking has no thinking block: an empty one with no
/// signature of the server's would be refused.
fn thinking(reasoning: &Reasoning) -> Vec<Value> {
    let redacted = reasoning
        .redacted
        .iter()
        .map(|data| json!({"type": "redacted_thinking", "data": data}));
    if reasoning.text.is_empty() && reasoning.signature.is_none() && !reasoning.redacted.is_empty()
    {
        return redacted.collect();
    }
    let signature = reasoning
        .signature
        .as_deref()
        .or_else(|| {
            reasoning
                .opaque
                .as_ref()
                .and_then(|o| o.get("signature"))
                .and_then(Value::as_str)
        })
        .or(reasoning.sealed.as_deref())
        .unwrap_or("");
    let block = json!({"type": "thinking", "thinking": reasoning.text, "signature": signature});
    std::iter::once(block).chain(redacted).collect()
}

/// A call as `tool_use`: its arguments parsed (an object, else empty); Edit's as Claude Code
/// writes them (`replace_all` said, no trailing blanks on `new_string`'s lines).
fn tool_use(call: &ToolCall, n: usize) -> Value {
    let id = call.id.clone().unwrap_or_else(|| format!("toolu_{n:02}"));
    let mut input = serde_json::from_str::<Value>(&call.input.as_arguments())
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    if call.name == "Edit" {
        edit_input(&mut input);
    }
    json!({"type": "tool_use", "id": id, "name": call.name, "input": input})
}

fn edit_input(input: &mut Map<String, Value>) {
    input.entry("replace_all").or_insert(Value::Bool(false));
    if let Some(Value::String(text)) = input.get_mut("new_string") {
        let lines: Vec<&str> = text
            .split('\n')
            .map(|l| l.trim_end_matches([' ', '\t']))
            .collect();
        *text = lines.join("\n");
    }
}

/// A developer text's `<skills_instructions>` block as `skills` says; `None` for any other text.
fn skills_block(text: &str, skills: Skills) -> Option<String> {
    let start = text.find("<skills_instructions>")?;
    let block = &text[start..];
    let block = block
        .find("</skills_instructions>")
        .map_or(block, |end| &block[..end + "</skills_instructions>".len()]);
    match skills {
        Skills::Dropped => None,
        Skills::Raw => Some(block.to_owned()),
        Skills::Listed => {
            let lines: Vec<String> = block
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("- "))
                .filter(|l| l.contains(": "))
                .map(|l| {
                    let l = l.find(" (file:").map_or(l, |at| &l[..at]);
                    format!("- {}", l.trim_end())
                })
                .collect();
            (!lines.is_empty())
                .then(|| format!("{SKILLS_OPENING}{}\n</system-reminder>\n", lines.join("\n")))
        }
    }
}

/// The date reminder as the first block of the first user message (a new first message when
/// there is none).
fn remind(messages: &mut Vec<Message>, reminder: &str) {
    let block = json!({"type": "text", "text": reminder});
    match messages.iter_mut().find(|m| m.role == "user") {
        Some(first) => {
            let after_skills = first.blocks.first().is_some_and(|b| {
                b["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(SKILLS_OPENING))
            });
            first.blocks.insert(usize::from(after_skills), block);
        }
        None => messages.insert(
            0,
            Message {
                role: "user",
                blocks: vec![block],
            },
        ),
    }
}

/// One cache breakpoint: on the last non-empty text or tool-result block of the whole list.
fn mark_breakpoint(messages: &mut [Message]) {
    let last = messages
        .iter_mut()
        .rev()
        .flat_map(|m| m.blocks.iter_mut().rev())
        .find(|b| match b["type"].as_str() {
            Some("text") => b["text"].as_str().is_some_and(|t| !t.is_empty()),
            Some("tool_result") => true,
            _ => false,
        });
    if let Some(block) = last {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

/// The message on the wire: a user message of one uncached text is that text.
fn finish(message: Message) -> Value {
    let content = match message.blocks.as_slice() {
        [only]
            if message.role == "user"
                && only["type"] == "text"
                && only.get("cache_control").is_none() =>
        {
            only["text"].clone()
        }
        _ => Value::Array(message.blocks),
    };
    json!({"role": message.role, "content": content})
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
