//! Anthropic Messages request → Chat Completions request (the pivot the harnesses rewrite).
//!
//! Lenient by design: every field Claude Code sends is typed, anything else is ignored — never a
//! 400 for an unknown field or block type, because Claude Code answers a 400 by retrying up to six
//! times with features stripped. Only a body that is not a Messages request at all (not JSON, no
//! `messages` array) is refused.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::api::chat::{
    Arguments, ChatRequest, Content, ContentPart, FunctionCall, FunctionDef, Message, Role,
    StreamOptions, ToolCall, ToolDef,
};

#[derive(Debug, Deserialize)]
pub struct MessagesRequest {
    #[serde(default)]
    pub model: String,
    pub messages: Vec<InMessage>,
    #[serde(default)]
    pub system: Option<Text>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub thinking: Option<Thinking>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub output_config: Option<OutputConfig>,
    // `context_management` (server-side context editing) is ignored: the upstream keeps no
    // context between requests, so there is nothing to edit.
}

#[derive(Debug, Deserialize)]
pub struct InMessage {
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub content: Option<Text>,
}

/// `content` (and `system`): a string or an array of blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Text {
    Plain(String),
    Blocks(Vec<Block>),
}

/// One content block; its `type` says which fields matter. Unknown types are skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    /// `tool_use`.
    pub id: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
    /// `tool_result`.
    pub tool_use_id: Option<String>,
    pub content: Option<Text>,
    pub is_error: Option<bool>,
    /// `image`.
    pub source: Option<ImageSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ImageSource {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: Option<String>,
    pub data: Option<String>,
    pub url: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ToolChoice {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct Thinking {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub budget_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct Metadata {
    #[serde(default)]
    pub user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct OutputConfig {
    #[serde(default)]
    pub effort: Option<String>,
    #[serde(default)]
    pub format: Option<OutputFormat>,
}

#[derive(Debug, Deserialize)]
pub struct OutputFormat {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub schema: Option<Value>,
}

impl Metadata {
    /// Claude Code's `user_id` is a JSON text `{"device_id","account_uuid","session_id"}`.
    pub fn session_id(&self) -> Option<String> {
        let parsed: Value = serde_json::from_str(self.user_id.as_deref()?).ok()?;
        parsed
            .get("session_id")?
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }
}

/// The Chat Completions request, and the server tools that have no Chat Completions form.
pub struct Converted {
    pub chat: ChatRequest,
    pub dropped_tools: Vec<String>,
}

impl MessagesRequest {
    pub fn into_chat(self) -> Converted {
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        if let Some(system) = self.system.as_ref().map(|s| joined_text(s, "\n\n"))
            && !system.is_empty()
        {
            messages.push(text_message(Role::System, system));
        }
        for message in &self.messages {
            convert_message(message, &mut messages);
        }
        let (tools, dropped_tools) = convert_tools(self.tools.unwrap_or_default());
        let reasoning_effort = self
            .output_config
            .as_ref()
            .and_then(|c| c.effort.as_deref())
            .map(effort)
            .or_else(|| self.thinking.as_ref().and_then(Thinking::effort));
        let mut extra = Map::new();
        if let Some(stop) = self.stop_sequences.filter(|s| !s.is_empty()) {
            extra.insert("stop".into(), json!(stop));
        }
        if let Some(format) = self
            .output_config
            .as_ref()
            .and_then(|c| c.format.as_ref())
            .filter(|f| f.kind == "json_schema")
        {
            extra.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": "output",
                    "schema": format.schema.clone().unwrap_or_else(|| json!({})),
                }}),
            );
        }
        let (tool_choice, parallel_tool_calls) = match &self.tool_choice {
            Some(choice) => choice.to_chat(),
            None => (None, None),
        };
        let stream = self.stream.unwrap_or(false);
        let chat = ChatRequest {
            model: self.model,
            messages,
            // The harness asks the upstream for a stream either way; the renderer decides.
            stream: Some(stream),
            stream_options: stream.then(|| StreamOptions {
                include_usage: Some(true),
                extra: Map::new(),
            }),
            tools: (!tools.is_empty()).then_some(tools),
            tool_choice,
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: self.max_tokens,
            max_completion_tokens: None,
            reasoning_effort,
            parallel_tool_calls,
            user: None,
            extra,
        };
        Converted {
            chat,
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

impl ToolChoice {
    fn to_chat(&self) -> (Option<Value>, Option<bool>) {
        let choice = match self.kind.as_str() {
            "auto" => Some(json!("auto")),
            "any" => Some(json!("required")),
            "none" => Some(json!("none")),
            "tool" => self
                .name
                .as_ref()
                .map(|name| json!({"type": "function", "function": {"name": name}})),
            _ => None,
        };
        (choice, self.disable_parallel_tool_use.map(|d| !d))
    }
}

/// Custom tools (no `type`, or `custom`) become functions; server tools (`web_search_…`,
/// `bash_…`, …) have no Chat Completions form and are reported as dropped.
fn convert_tools(tools: Vec<Value>) -> (Vec<ToolDef>, Vec<String>) {
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
        out.push(ToolDef {
            kind: "function".into(),
            function: Some(FunctionDef {
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
                extra: Map::new(),
            }),
            name: None,
            extra: Map::new(),
        });
    }
    (out, dropped)
}

fn text_message(role: Role, text: String) -> Message {
    Message {
        role,
        content: Some(Content::Text(text)),
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: Map::new(),
    }
}

/// The text of a string or of the text blocks, joined by `separator` (`cache_control` and other
/// block fields dropped).
fn joined_text(text: &Text, separator: &str) -> String {
    match text {
        Text::Plain(text) => text.clone(),
        Text::Blocks(blocks) => blocks
            .iter()
            .filter(|b| b.kind == "text")
            .filter_map(|b| b.text.as_deref())
            .collect::<Vec<_>>()
            .join(separator),
    }
}

fn convert_message(message: &InMessage, out: &mut Vec<Message>) {
    let Some(content) = message.content.as_ref() else {
        return;
    };
    match message.role.as_str() {
        // Newer Claude Code sends its environment as a system message inside `messages`.
        "system" => {
            let text = joined_text(content, "\n\n");
            if !text.is_empty() {
                out.push(text_message(Role::System, text));
            }
        }
        "assistant" => out.push(assistant_message(content)),
        _ => user_messages(content, out),
    }
}

/// Text and calls; `thinking`/`redacted_thinking` blocks are the client's echo of our own
/// reasoning and never go upstream as text.
fn assistant_message(content: &Text) -> Message {
    let blocks = match content {
        Text::Plain(text) => return text_message(Role::Assistant, text.clone()),
        Text::Blocks(blocks) => blocks,
    };
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block.kind.as_str() {
            "text" => texts.extend(block.text.as_deref()),
            "tool_use" => calls.push(ToolCall {
                id: block.id.clone(),
                kind: Some("function".into()),
                function: FunctionCall {
                    name: block.name.clone().unwrap_or_default(),
                    arguments: Arguments::Text(
                        block
                            .input
                            .as_ref()
                            .map_or_else(|| "{}".to_owned(), Value::to_string),
                    ),
                },
                extra: Map::new(),
            }),
            _ => {}
        }
    }
    let mut message = text_message(Role::Assistant, texts.join("\n"));
    if !calls.is_empty() {
        message.tool_calls = Some(calls);
    }
    message
}

/// A user turn: each `tool_result` becomes a tool message, each whole `<system-reminder>` text
/// block its own user message (so the harness recognises it as contextual), and the rest (text,
/// images) one user message, in the order they came.
fn user_messages(content: &Text, out: &mut Vec<Message>) {
    let blocks = match content {
        Text::Plain(text) => return out.push(text_message(Role::User, text.clone())),
        Text::Blocks(blocks) => blocks,
    };
    let mut parts: Vec<ContentPart> = Vec::new();
    for block in blocks {
        match block.kind.as_str() {
            "tool_result" => {
                flush_user(&mut parts, out);
                let mut message = text_message(
                    Role::Tool,
                    // As opencode joins a result's text parts.
                    block
                        .content
                        .as_ref()
                        .map(|c| joined_text(c, "\n"))
                        .unwrap_or_default(),
                );
                message.tool_call_id = block.tool_use_id.clone();
                out.push(message);
            }
            "text" => {
                let Some(text) = block.text.as_deref() else {
                    continue;
                };
                if is_reminder(text) {
                    flush_user(&mut parts, out);
                    out.push(text_message(Role::User, text.to_owned()));
                } else {
                    parts.push(text_part(text));
                }
            }
            "image" => parts.extend(block.source.as_ref().and_then(image_part)),
            _ => {}
        }
    }
    flush_user(&mut parts, out);
}

fn is_reminder(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("<system-reminder>") && text.ends_with("</system-reminder>")
}

fn flush_user(parts: &mut Vec<ContentPart>, out: &mut Vec<Message>) {
    if parts.is_empty() {
        return;
    }
    let parts = std::mem::take(parts);
    let content = match parts.as_slice() {
        [only] if only.kind == "text" => Content::Text(only.text.clone().unwrap_or_default()),
        _ => Content::Parts(parts),
    };
    out.push(Message {
        content: Some(content),
        ..text_message(Role::User, String::new())
    });
}

fn text_part(text: &str) -> ContentPart {
    ContentPart {
        kind: "text".into(),
        text: Some(text.to_owned()),
        extra: Map::new(),
    }
}

/// `base64` sources become data URLs; `url` sources keep their URL.
fn image_part(source: &ImageSource) -> Option<ContentPart> {
    let url = match source.kind.as_str() {
        "base64" => format!(
            "data:{};base64,{}",
            source.media_type.as_deref().unwrap_or("image/png"),
            source.data.as_deref()?
        ),
        "url" => source.url.clone()?,
        _ => return None,
    };
    let mut extra = Map::new();
    extra.insert("image_url".into(), json!({ "url": url }));
    Some(ContentPart {
        kind: "image_url".into(),
        text: None,
        extra,
    })
}
