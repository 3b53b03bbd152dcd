//! A Messages request → the conversation model, directly (no Chat Completions request between).
//!
//! Owns every Messages-to-model rule: `system` (string or blocks, billing header included, joined
//! by a blank line) and `role: "system"` messages become system messages; an assistant turn becomes
//! its reasoning (`thinking` / `redacted_thinking`: text and signature, which may be the proxy's
//! own seal, `conversation::seal`), its text and its calls; a user turn becomes its tool results
//! (text, and images when a result holds them), reminders and the rest in the order they came;
//! custom tools become functions and server tools are reported as dropped; sampling options,
//! `tool_choice`, effort and output format get their model slots. Must not know any harness or
//! client-dialect rule (that is `clients` and `harness`), nor the Chat Completions wire types.

use serde_json::{Map, Value, json};

use super::request::{Block, BlockKind, ImageSource, InMessage, MessagesRequest, Text, Thinking};
use super::request::{OutputConfig, ToolChoice as InToolChoice};
use crate::conversation::{
    CallInput, ClientInfo, Content, Conversation, FunctionTool, Image, Item, Message, Options,
    Part, Reasoning, ResponseFormat, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};

/// The conversation, and the server tools that have no Chat Completions form.
pub struct Converted {
    pub conversation: Conversation,
    pub dropped_tools: Vec<String>,
}

impl MessagesRequest {
    /// The model of this request. `client` is left to the caller (the front knows its profile).
    pub fn into_conversation(self) -> Converted {
        let mut items = Vec::with_capacity(self.messages.len() + 1);
        if let Some(system) = self.system.as_ref().map(|s| joined_text(s, "\n\n"))
            && !system.is_empty()
        {
            items.push(Item::Message(Message::text(Role::System, system)));
        }
        for message in &self.messages {
            push_message(message, &mut items);
        }
        let (tools, dropped_tools) = convert_tools(self.tools.unwrap_or_default());
        let reasoning_effort = self
            .output_config
            .as_ref()
            .and_then(|c| c.effort.as_deref())
            .map(effort)
            .or_else(|| self.thinking.as_ref().and_then(Thinking::effort));
        let (tool_choice, parallel_tool_calls) = match &self.tool_choice {
            Some(choice) => choice.to_model(),
            None => (None, None),
        };
        let options = Options {
            stream: self.stream.unwrap_or(false),
            // Anthropic always reports usage.
            include_usage: true,
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: self.max_tokens,
            reasoning_effort,
            tool_choice,
            parallel_tool_calls,
            stop: self.stop_sequences.unwrap_or_default(),
            response_format: self.output_config.as_ref().and_then(response_format),
            extra: Map::new(),
        };
        Converted {
            conversation: Conversation {
                model: self.model,
                items,
                tools,
                options,
                client: ClientInfo::default(),
            },
            dropped_tools,
        }
    }
}

impl Thinking {
    /// A thinking budget as a Chat Completions effort. `adaptive` (the model decides how much to
    /// think) reads as `medium`; `disabled` sends none.
    fn effort(&self) -> Option<String> {
        match self.kind.as_str() {
            "enabled" => Some(
                match self.budget_tokens.unwrap_or(0) {
                    0..8_192 => "low",
                    8_192..24_576 => "medium",
                    _ => "high",
                }
                .to_owned(),
            ),
            "adaptive" => Some("medium".to_owned()),
            _ => None,
        }
    }
}

/// Anthropic's effort words (`low`, `medium`, `high`, `max`) as Chat Completions ones.
fn effort(word: &str) -> String {
    match word {
        "max" | "xhigh" => "high".to_owned(),
        other => other.to_owned(),
    }
}

impl InToolChoice {
    /// The choice, and whether parallel calls are allowed (`disable_parallel_tool_use` inverted).
    fn to_model(&self) -> (Option<ToolChoice>, Option<bool>) {
        let choice = match self.kind.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "any" => Some(ToolChoice::Required),
            "none" => Some(ToolChoice::None),
            "tool" => self.name.clone().map(ToolChoice::Tool),
            _ => None,
        };
        (choice, self.disable_parallel_tool_use.map(|d| !d))
    }
}

/// Only a JSON-schema output has a Chat Completions form (named `output`; an absent schema is the
/// empty one).
fn response_format(config: &OutputConfig) -> Option<ResponseFormat> {
    let format = config.format.as_ref().filter(|f| f.kind == "json_schema")?;
    Some(ResponseFormat::JsonSchema {
        name: "output".to_owned(),
        schema: Some(format.schema.clone().unwrap_or_else(|| json!({}))),
        strict: None,
    })
}

/// Custom tools (no `type`, or `custom`) become functions; server tools (`web_search_…`,
/// `bash_…`, …) have no Chat Completions form and are reported as dropped, not kept.
fn convert_tools(tools: Vec<Value>) -> (Vec<ToolDefinition>, Vec<String>) {
    let mut out = Vec::with_capacity(tools.len());
    let mut dropped = Vec::new();
    for tool in tools {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if kind != "custom" {
            dropped.push(if name.is_empty() { kind } else { name }.to_owned());
            continue;
        }
        if name.is_empty() {
            continue;
        }
        out.push(ToolDefinition::Function(FunctionTool {
            name: name.to_owned(),
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            parameters: Some(
                tool.get("input_schema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            ),
            strict: None,
            ..FunctionTool::default()
        }));
    }
    (out, dropped)
}

/// The text of a string or of the text blocks, joined by `separator` (`cache_control` and other
/// block fields dropped).
fn joined_text(text: &Text, separator: &str) -> String {
    match text {
        Text::Plain(text) => text.clone(),
        Text::Blocks(blocks) => blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Text)
            .filter_map(|b| b.text.as_deref())
            .collect::<Vec<_>>()
            .join(separator),
    }
}

fn push_message(message: &InMessage, out: &mut Vec<Item>) {
    let Some(content) = message.content.as_ref() else {
        return;
    };
    match message.role.as_str() {
        // Newer Claude Code sends its environment as a system message inside `messages`.
        "system" => {
            let text = joined_text(content, "\n\n");
            if !text.is_empty() {
                out.push(Item::Message(Message::text(Role::System, text)));
            }
        }
        "assistant" => assistant_items(content, out),
        _ => user_items(content, out),
    }
}

/// The turn's reasoning first, then its text blocks as one message (even an empty one: it still
/// ends an exchange), then its calls. Reasoning goes before the text, not where it came, so the
/// calls stay right after their message, as the model wants.
fn assistant_items(content: &Text, out: &mut Vec<Item>) {
    let blocks = match content {
        Text::Plain(text) => {
            return out.push(Item::Message(Message::text(Role::Assistant, text.clone())));
        }
        Text::Blocks(blocks) => blocks,
    };
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block.kind {
            BlockKind::Text => texts.extend(block.text.as_deref()),
            BlockKind::ToolUse => calls.push(Item::ToolCall(ToolCall {
                id: block.id.clone(),
                name: block.name.clone().unwrap_or_default(),
                input: CallInput::Arguments(
                    block
                        .input
                        .as_ref()
                        .map_or_else(|| "{}".to_owned(), Value::to_string),
                ),
            })),
            BlockKind::Thinking | BlockKind::RedactedThinking => {
                out.push(Item::Reasoning(reasoning(block)));
            }
            _ => {}
        }
    }
    out.push(Item::Message(Message::text(
        Role::Assistant,
        texts.join("\n"),
    )));
    out.extend(calls);
}

/// The client's echo of our own reasoning: readable text if any, and the block itself (rebuilt
/// from its typed fields, which are all a thinking block has) for a protocol that needs it back.
fn reasoning(block: &Block) -> Reasoning {
    let mut raw = Map::new();
    raw.insert("type".into(), json!(block.kind.as_str()));
    for (key, value) in [
        ("thinking", &block.thinking),
        ("signature", &block.signature),
        ("data", &block.data),
    ] {
        if let Some(value) = value {
            raw.insert(key.into(), json!(value));
        }
    }
    Reasoning {
        text: block.thinking.clone().unwrap_or_default(),
        opaque: Some(Value::Object(raw)),
        sealed: block.signature.clone(),
        signature: None,
        // A server's redacted block echoed as it came (a history that did not pass the proxy).
        redacted: match block.kind {
            BlockKind::RedactedThinking => block.data.iter().cloned().collect(),
            _ => Vec::new(),
        },
    }
}

/// A user turn: each `tool_result` becomes a result, each whole `<system-reminder>` text block its
/// own user message (so the harness recognises it as contextual), and the rest (text, images) one
/// user message, in the order they came.
fn user_items(content: &Text, out: &mut Vec<Item>) {
    let blocks = match content {
        Text::Plain(text) => {
            return out.push(Item::Message(Message::text(Role::User, text.clone())));
        }
        Text::Blocks(blocks) => blocks,
    };
    let mut parts: Vec<Part> = Vec::new();
    for block in blocks {
        match block.kind {
            BlockKind::ToolResult => {
                flush_user(&mut parts, out);
                out.push(Item::ToolResult(ToolResult {
                    call_id: block.tool_use_id.clone(),
                    content: block
                        .content
                        .as_ref()
                        .map(result_content)
                        .unwrap_or_default(),
                    is_error: block.is_error.unwrap_or(false),
                }));
            }
            BlockKind::Text => {
                let Some(text) = block.text.as_deref() else {
                    continue;
                };
                if is_reminder(text) {
                    flush_user(&mut parts, out);
                    out.push(Item::Message(Message::text(Role::User, text)));
                } else {
                    parts.push(Part::Text(text.to_owned()));
                }
            }
            BlockKind::Image => parts.extend(block.source.as_ref().and_then(image_part)),
            _ => {}
        }
    }
    flush_user(&mut parts, out);
}

/// A tool result's content: its text parts joined by `\n` (as opencode joins them), or, when it
/// holds images (Claude Code's Read of a PNG), its text and image parts in order.
fn result_content(content: &Text) -> Content {
    let blocks = match content {
        Text::Blocks(blocks) if blocks.iter().any(|b| b.kind == BlockKind::Image) => blocks,
        _ => return Content::Text(joined_text(content, "\n")),
    };
    Content::Parts(
        blocks
            .iter()
            .filter_map(|block| match block.kind {
                BlockKind::Text => block.text.clone().map(Part::Text),
                BlockKind::Image => block.source.as_ref().and_then(image_part),
                _ => None,
            })
            .collect(),
    )
}

fn is_reminder(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("<system-reminder>") && text.ends_with("</system-reminder>")
}

/// The pending text and images as one user message; a lone text is a plain string.
fn flush_user(parts: &mut Vec<Part>, out: &mut Vec<Item>) {
    if parts.is_empty() {
        return;
    }
    let mut parts = std::mem::take(parts);
    let content = match parts.as_mut_slice() {
        [Part::Text(only)] => Content::Text(std::mem::take(only)),
        _ => Content::Parts(parts),
    };
    out.push(Item::Message(Message {
        role: Role::User,
        content,
    }));
}

/// `base64` sources become data URLs; `url` sources keep their URL.
fn image_part(source: &ImageSource) -> Option<Part> {
    let url = match source.kind.as_str() {
        "base64" => format!(
            "data:{};base64,{}",
            source.media_type.as_deref().unwrap_or("image/png"),
            source.data.as_deref()?
        ),
        "url" => source.url.clone()?,
        _ => return None,
    };
    Some(Part::Image(Image { url, detail: None }))
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
