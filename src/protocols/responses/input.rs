//! `instructions` + `input` → the conversation's items, in the client's order.
//!
//! `instructions`, or else a leading developer message (Codex's base prompt: Codex sends no
//! `instructions`), is the system message; other messages keep their role. `function_call` and
//! `custom_tool_call` are calls (arguments JSON, or freeform input), their outputs are results
//! (text, and images when an output holds `input_image`); a `reasoning` item is its summary text,
//! its `encrypted_content` (maybe the proxy's own seal, `conversation::seal`) and the item itself.
//! Hosted-tool calls and item references have no place in the model and are left out. Knows
//! nothing of Chat Completions.

use serde_json::Value;

use super::request::{Input, InputItem, MessageContent};
use crate::conversation::{
    CallInput, Content, Image, Item, Message, Part, Reasoning, Role, ToolCall, ToolResult,
};
use crate::error::ProxyError;

/// The conversation's items; an image given by `file_id` is refused (the proxy keeps no files).
pub fn items(instructions: Option<String>, input: Option<Input>) -> Result<Vec<Item>, ProxyError> {
    let mut out = Vec::new();
    let system_given = match instructions.filter(|i| !i.is_empty()) {
        Some(instructions) => {
            out.push(Item::Message(Message::text(Role::System, instructions)));
            true
        }
        None => false,
    };
    let items = match input {
        None => return Ok(out),
        Some(Input::Text(text)) => {
            out.push(Item::Message(Message::text(Role::User, text)));
            return Ok(out);
        }
        Some(Input::Items(items)) => items,
    };
    out.reserve(items.len());
    // An assistant message without content, until we know whether calls follow it: then it is only
    // the opening of their turn (no message of its own), else an empty answer.
    let mut contentless_answer: Option<usize> = None;
    // No message came before (an `additional_tools` item may).
    let mut first_message = true;
    for item in items {
        let item = match item {
            InputItem::Reasoning(raw) => {
                out.push(Item::Reasoning(reasoning(raw)));
                continue;
            }
            InputItem::Other(item) => item,
        };
        let kind = item.kind.as_deref().unwrap_or("message");
        let call = match kind {
            "message" => {
                let mut role = match item.role.as_deref() {
                    Some("system") => Role::System,
                    Some("developer") => Role::Developer,
                    Some("assistant") => Role::Assistant,
                    _ => Role::User,
                };
                // Codex's base prompt is the first developer message, the counterpart of the
                // chat-era system message (after its `additional_tools` item, if any).
                if role == Role::Developer && first_message && !system_given {
                    role = Role::System;
                }
                first_message = false;
                contentless_answer =
                    (role == Role::Assistant && item.content.is_none()).then_some(out.len());
                out.push(Item::Message(Message {
                    role,
                    content: item.content.map(content).transpose()?.unwrap_or_default(),
                }));
                continue;
            }
            "function_call" => CallInput::Arguments(item.arguments.unwrap_or_else(|| "{}".into())),
            "custom_tool_call" => CallInput::Freeform(item.input.unwrap_or_default()),
            "function_call_output" | "custom_tool_call_output" => {
                contentless_answer = None;
                out.push(Item::ToolResult(ToolResult {
                    call_id: item.call_id,
                    content: output_content(item.output)?,
                    is_error: false,
                }));
                continue;
            }
            // Hosted-tool calls, item references: nothing the model holds.
            _ => continue,
        };
        if let Some(index) = contentless_answer.take() {
            out.remove(index);
        }
        out.push(Item::ToolCall(ToolCall {
            id: item.call_id,
            name: item.name.unwrap_or_default(),
            input: call,
        }));
    }
    Ok(out)
}

/// A reasoning item: its summary texts, one paragraph each, and the item itself.
fn reasoning(raw: Value) -> Reasoning {
    let text = raw
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n\n");
    let sealed = raw
        .get("encrypted_content")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Reasoning {
        text,
        opaque: Some(raw),
        sealed,
        signature: None,
        redacted: Vec::new(),
    }
}

/// Message content: a string stays one; parts keep text and images (`refusal` and file parts have no
/// place here), and a lone text part is one string again.
fn content(content: MessageContent) -> Result<Content, ProxyError> {
    let parts = match content {
        MessageContent::Text(text) => return Ok(Content::Text(text)),
        MessageContent::Parts(parts) => parts,
    };
    let mut converted: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts {
        match part.kind.as_str() {
            "input_text" | "output_text" | "text" | "summary_text" => {
                converted.push(Part::Text(part.text.unwrap_or_default()));
            }
            "input_image" => {
                let url = match part.image_url {
                    Some(Value::String(url)) => Some(url),
                    Some(Value::Object(mut image)) => match image.remove("url") {
                        Some(Value::String(url)) => Some(url),
                        _ => None,
                    },
                    _ => None,
                };
                match (url, part.file_id) {
                    (Some(url), _) => converted.push(Part::Image(Image {
                        url,
                        detail: part.detail,
                    })),
                    (None, Some(_)) => {
                        return Err(ProxyError::InvalidRequest {
                            message: "an input_image given by file_id cannot be sent: this proxy keeps no files and the upstream has none; send the image as image_url (a URL or a data: URL)".into(),
                            param: Some("input"),
                            code: "image_file_id_unsupported",
                        });
                    }
                    (None, None) => {}
                }
            }
            _ => {}
        }
    }
    if let [Part::Text(only)] = converted.as_mut_slice() {
        return Ok(Content::Text(std::mem::take(only)));
    }
    Ok(Content::Parts(converted))
}

/// A tool output: the string, or its text parts joined by `\n`; when it holds images (Codex's
/// `view_image`), its text and image parts in order.
fn output_content(output: Option<MessageContent>) -> Result<Content, ProxyError> {
    match output {
        None => Ok(Content::Text(String::new())),
        Some(MessageContent::Text(text)) => Ok(Content::Text(text)),
        Some(MessageContent::Parts(parts)) if parts.iter().any(|p| p.kind == "input_image") => {
            match content(MessageContent::Parts(parts))? {
                Content::Text(text) => Ok(Content::Text(text)),
                Content::Parts(parts) => Ok(Content::Parts(parts)),
            }
        }
        Some(MessageContent::Parts(parts)) => Ok(Content::Text(
            parts
                .into_iter()
                .filter_map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n"),
        )),
    }
}
