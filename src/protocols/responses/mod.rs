//! The OpenAI Responses front (`/v1/responses`, what Codex CLI 0.95+ speaks): a Responses request
//! becomes a Chat Completions request (tools still in the client's dialect), and `render` turns the
//! answer events back into Responses SSE events or one `response` object.
//!
//! Mapping (README "Codex CLI (0.95 and later)"): `instructions`, or else a leading developer
//! message (Codex's base prompt), is the system message; other messages keep their role; calls and
//! outputs become assistant `tool_calls` and `tool` messages; `reasoning` items are never sent back
//! as text; custom (freeform) tools become functions taking `{"input": string}`; namespaces are
//! flattened; hosted tools are dropped and reported. `previous_response_id` is refused: this proxy
//! keeps no responses, so the client must send the whole input.
//!
//! Pure: no clock, no I/O. `parse` takes the response id and time from the caller's `Stamp`.

mod item;
pub mod render;
pub mod request;
#[cfg(test)]
mod tests;
mod tools;

use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};

use self::render::{ResponseRenderer, ToolKinds};
use self::request::{Input, Item, MessageContent, ResponsesRequest};
use super::Inbound;
use crate::api::chat::{
    Arguments, ChatRequest, Content, ContentPart, FunctionCall, Message, Role, StreamOptions,
    ToolCall,
};
use crate::error::ProxyError;

/// The client profile Codex gets on this front (its Responses-era tools: `exec_command`,
/// `apply_patch`), picked by the same User-Agent / `originator` signs as the chat-era `codex`.
pub const CODEX_PROFILE: &str = "codex-responses";

/// What names this response: its id and creation time (unix seconds).
#[derive(Debug, Clone)]
pub struct Stamp {
    pub id: String,
    pub created_at: u64,
}

impl Stamp {
    /// A fresh id and the current time.
    pub fn now() -> Self {
        let created_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
            created_at,
        }
    }
}

/// The route's entry point (`routes::chat::ParseFn`).
pub fn parse(body: &Bytes, headers: &HeaderMap) -> Result<Inbound, ProxyError> {
    parse_with(body, headers, Stamp::now())
}

/// `parse` with a given id and time (golden tests).
pub fn parse_with(body: &[u8], headers: &HeaderMap, stamp: Stamp) -> Result<Inbound, ProxyError> {
    let request: ResponsesRequest = serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ProxyError::InvalidJson(format!("request body is not valid JSON: {e}"))
        } else {
            ProxyError::InvalidRequest {
                message: format!("invalid responses request: {e}"),
                param: None,
                code: "invalid_request",
            }
        }
    })?;
    if request
        .previous_response_id
        .as_deref()
        .is_some_and(|id| !id.is_empty())
    {
        return Err(ProxyError::InvalidRequest {
            message: "previous_response_id is not supported: this proxy keeps no responses; send the whole conversation in `input` (Codex: supports_websockets = false)".into(),
            param: Some("previous_response_id"),
            code: "previous_response_id_unsupported",
        });
    }
    let tools = tools::convert(&request.tools);
    let messages = messages(&request);
    let chat = ChatRequest {
        model: request.model.clone(),
        messages,
        // The upstream always streams (with usage): the renderer needs events either way.
        stream: Some(true),
        stream_options: Some(StreamOptions {
            include_usage: Some(true),
            extra: serde_json::Map::new(),
        }),
        tools: (!tools.functions.is_empty()).then_some(tools.functions),
        tool_choice: request.tool_choice.as_ref().and_then(tools::tool_choice),
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_output_tokens,
        max_completion_tokens: None,
        reasoning_effort: request.reasoning.as_ref().and_then(|r| r.effort.clone()),
        parallel_tool_calls: request.parallel_tool_calls,
        user: None,
        extra: extra_fields(&request),
    };
    let renderer = ResponseRenderer::new(
        stamp,
        request.model,
        ToolKinds {
            custom: tools.custom,
            namespaced: tools.namespaced,
        },
    );
    let mut conversation = crate::protocols::chat::request::to_conversation(chat);
    conversation.options.stream = request.stream.unwrap_or(false);
    conversation.client.profile = is_codex(headers).then_some(CODEX_PROFILE);
    conversation.client.conversation_key =
        request.prompt_cache_key.filter(|k| !k.trim().is_empty());
    Ok(Inbound {
        conversation,
        renderer: Some(Box::new(renderer)),
        dropped_tools: tools.dropped,
    })
}

/// Codex CLI, by its User-Agent or its `originator` header.
pub fn is_codex(headers: &HeaderMap) -> bool {
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    ["codex_exec/", "codex_cli_rs/", "codex-tui"]
        .iter()
        .any(|prefix| agent.starts_with(prefix))
        || headers
            .get("originator")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|o| o.starts_with("codex"))
}

/// Chat fields with no typed slot: `response_format` from `text.format`, `prompt_cache_key`.
fn extra_fields(request: &ResponsesRequest) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    if let Some(format) = request.text.as_ref().and_then(|t| t.format.as_ref()) {
        match format.kind.as_str() {
            "json_schema" => {
                let mut schema = serde_json::Map::new();
                schema.insert(
                    "name".into(),
                    json!(format.name.as_deref().unwrap_or("response")),
                );
                if let Some(body) = &format.schema {
                    schema.insert("schema".into(), body.clone());
                }
                if let Some(strict) = format.strict {
                    schema.insert("strict".into(), json!(strict));
                }
                extra.insert(
                    "response_format".into(),
                    json!({"type": "json_schema", "json_schema": schema}),
                );
            }
            "json_object" => {
                extra.insert("response_format".into(), json!({"type": "json_object"}));
            }
            _ => {}
        }
    }
    if let Some(key) = &request.prompt_cache_key {
        extra.insert("prompt_cache_key".into(), json!(key));
    }
    extra
}

/// `instructions` + `input` → chat messages.
fn messages(request: &ResponsesRequest) -> Vec<Message> {
    let mut out = Vec::new();
    let mut system_given = false;
    if let Some(instructions) = request.instructions.as_deref().filter(|i| !i.is_empty()) {
        out.push(text_message(Role::System, instructions.to_owned()));
        system_given = true;
    }
    let items = match &request.input {
        None => return out,
        Some(Input::Text(text)) => {
            out.push(text_message(Role::User, text.clone()));
            return out;
        }
        Some(Input::Items(items)) => items,
    };
    for (position, item) in items.iter().enumerate() {
        match item.kind.as_deref().unwrap_or("message") {
            "message" => {
                let mut role = match item.role.as_deref() {
                    Some("system") => Role::System,
                    Some("developer") => Role::Developer,
                    Some("assistant") => Role::Assistant,
                    _ => Role::User,
                };
                // Codex sends no `instructions`: its base prompt is the first developer message,
                // the counterpart of the chat-era system message.
                if role == Role::Developer && position == 0 && !system_given {
                    role = Role::System;
                }
                out.push(Message {
                    role,
                    content: item.content.as_ref().map(content),
                    name: None,
                    tool_calls: None,
                    tool_call_id: None,
                    extra: serde_json::Map::new(),
                });
            }
            "function_call" => push_call(
                &mut out,
                item,
                item.arguments.clone().unwrap_or_else(|| "{}".to_owned()),
            ),
            "custom_tool_call" => {
                let input = item.input.as_deref().unwrap_or_default();
                push_call(&mut out, item, json!({ "input": input }).to_string());
            }
            "function_call_output" | "custom_tool_call_output" => out.push(Message {
                role: Role::Tool,
                content: Some(Content::Text(output_text(item.output.as_ref()))),
                name: None,
                tool_calls: None,
                tool_call_id: item.call_id.clone(),
                extra: serde_json::Map::new(),
            }),
            // `reasoning` (echoed back, opaque), hosted-tool calls, references: nothing to send.
            _ => {}
        }
    }
    out
}

fn text_message(role: Role, text: String) -> Message {
    Message {
        role,
        content: Some(Content::Text(text)),
        name: None,
        tool_calls: None,
        tool_call_id: None,
        extra: serde_json::Map::new(),
    }
}

/// A call joins the assistant message right before it (Responses lists text and calls as
/// separate items; chat puts them in one message), else opens its own.
fn push_call(out: &mut Vec<Message>, item: &Item, arguments: String) {
    let call = ToolCall {
        id: item.call_id.clone(),
        kind: Some("function".into()),
        function: FunctionCall {
            name: item.name.clone().unwrap_or_default(),
            arguments: Arguments::Text(arguments),
        },
        extra: serde_json::Map::new(),
    };
    if let Some(last) = out.last_mut().filter(|m| m.role == Role::Assistant) {
        last.tool_calls.get_or_insert_with(Vec::new).push(call);
        return;
    }
    out.push(Message {
        role: Role::Assistant,
        content: None,
        name: None,
        tool_calls: Some(vec![call]),
        tool_call_id: None,
        extra: serde_json::Map::new(),
    });
}

/// Message content: one text part stays a string; several parts (or images) stay parts.
fn content(content: &MessageContent) -> Content {
    let parts = match content {
        MessageContent::Text(text) => return Content::Text(text.clone()),
        MessageContent::Parts(parts) => parts,
    };
    let converted: Vec<ContentPart> = parts
        .iter()
        .filter_map(|part| match part.kind.as_str() {
            "input_text" | "output_text" | "text" | "summary_text" => Some(ContentPart {
                kind: "text".into(),
                text: Some(part.text.clone().unwrap_or_default()),
                extra: serde_json::Map::new(),
            }),
            "input_image" => {
                let url = part.image_url.as_ref()?;
                let url = url
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| url.get("url").and_then(Value::as_str).map(str::to_owned))?;
                let mut image = json!({ "url": url });
                if let Some(detail) = &part.detail {
                    image["detail"] = json!(detail);
                }
                let mut extra = serde_json::Map::new();
                extra.insert("image_url".into(), image);
                Some(ContentPart {
                    kind: "image_url".into(),
                    text: None,
                    extra,
                })
            }
            // `refusal` and file parts have no chat form here.
            _ => None,
        })
        .collect();
    match converted.as_slice() {
        [only] if only.kind == "text" => Content::Text(only.text.clone().unwrap_or_default()),
        _ => Content::Parts(converted),
    }
}

/// A tool output's text: the string, or its text parts joined by `\n`.
fn output_text(output: Option<&MessageContent>) -> String {
    match output {
        None => String::new(),
        Some(MessageContent::Text(text)) => text.clone(),
        Some(MessageContent::Parts(parts)) => parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
