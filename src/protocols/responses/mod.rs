//! The OpenAI Responses front (`/v1/responses`, what Codex CLI 0.95+ speaks): a Responses request
//! becomes the protocol-neutral `Conversation` directly (tools still in the client's dialect), and
//! `render` turns the answer events back into Responses SSE events or one `response` object.
//!
//! Mapping (docs/agents.md "What the Responses front does"): items in `input` (messages, calls, outputs,
//! reasoning: summary and `encrypted_content`); tools in `tools` (functions, freeform `custom` tools, namespaces
//! flattened, hosted tools dropped and reported); here the options: sampling, `tool_choice`,
//! `text.format`, `prompt_cache_key` (also the conversation key), and the Codex profile when the
//! client is Codex; `include: ["reasoning.encrypted_content"]` makes the renderer seal reasoning
//! into `encrypted_content` (`conversation::seal`). `previous_response_id` is refused here: over
//! HTTP the proxy keeps no responses, so the client sends the whole input; over WebSocket
//! (`socket`) a connection keeps its last response and expands the id before this parse. How the
//! conversation is sent upstream is the harness's business: no Chat Completions type is built
//! here.
//!
//! Pure: no clock, no I/O. `parse` takes the response id and time from the caller's `Stamp`.

#[cfg(test)]
mod conversation_tests;
mod input;
mod item;
pub mod render;
pub mod request;
pub mod socket;
#[cfg(test)]
mod tests;
mod tools;

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

use self::render::ResponseRenderer;
use self::request::{Input, InputItem, ResponsesRequest, TextFormat};
use super::Inbound;
use crate::conversation::{ClientInfo, Conversation, Options, ResponseFormat};
use crate::error::ProxyError;

/// Responses, as `routes::FRONTS` serves it.
pub const PROTOCOL: super::ClientProtocol = super::ClientProtocol::named("responses");

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

/// The route's entry point (`routes::front::ParseFn`).
pub fn parse(body: &Bytes, headers: &HeaderMap) -> Result<Inbound, ProxyError> {
    parse_with(body, headers, Stamp::now())
}

/// `parse` with a given id and time (golden tests).
pub fn parse_with(body: &[u8], headers: &HeaderMap, stamp: Stamp) -> Result<Inbound, ProxyError> {
    let request: ResponsesRequest = serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ProxyError::invalid_json(e)
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
            message: "previous_response_id is not supported over HTTP: this proxy keeps no responses; send the whole conversation in `input` (over WebSocket, a connection's last response can be continued)".into(),
            param: Some("previous_response_id"),
            code: "previous_response_id_unsupported",
        });
    }
    let encrypted_reasoning = request
        .extra
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|include| {
            include
                .iter()
                .any(|i| i.as_str() == Some("reasoning.encrypted_content"))
        });
    let ResponsesRequest {
        model,
        mut input,
        instructions,
        mut tools,
        tool_choice,
        parallel_tool_calls,
        reasoning,
        max_output_tokens,
        stream,
        temperature,
        top_p,
        prompt_cache_key,
        text,
        ..
    } = request;
    // Tools offered inside the input are offered as those in `tools` are.
    if let Some(Input::Items(items)) = &mut input {
        for item in items.iter_mut() {
            if let InputItem::Other(item) = item
                && item.kind.as_deref() == Some("additional_tools")
            {
                tools.append(&mut item.tools);
            }
        }
    }
    let tools = tools::convert(tools);
    let mut extra = serde_json::Map::new();
    // Chat Completions has the same field: a plain rendering forwards it.
    if let Some(key) = &prompt_cache_key {
        extra.insert("prompt_cache_key".into(), Value::String(key.clone()));
    }
    let options = Options {
        stream: stream.unwrap_or(false),
        // The renderer reports usage whatever the client asked.
        include_usage: true,
        temperature,
        top_p,
        max_output_tokens,
        reasoning_effort: reasoning.and_then(|r| r.effort),
        tool_choice: tool_choice.as_ref().and_then(tools::tool_choice),
        parallel_tool_calls,
        stop: Vec::new(),
        response_format: text.and_then(|t| t.format).and_then(response_format),
        extra,
    };
    let renderer = ResponseRenderer::new(stamp, model.clone(), tools.kinds)
        .with_encrypted_reasoning(encrypted_reasoning);
    let conversation = Conversation {
        model,
        items: input::items(instructions, input)?,
        tools: tools.definitions,
        options,
        client: ClientInfo {
            profile: is_codex(headers).then_some(CODEX_PROFILE),
            conversation_key: prompt_cache_key.filter(|k| !k.trim().is_empty()),
            ..ClientInfo::default()
        },
    };
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
    crate::conversation::CODEX_USER_AGENTS
        .iter()
        .any(|prefix| agent.starts_with(prefix))
        || headers
            .get("originator")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|o| o.starts_with("codex"))
}

/// `text.format`: a JSON schema (named `response` when the client gave no name) or any JSON
/// object; plain text is the default and needs no format.
fn response_format(format: TextFormat) -> Option<ResponseFormat> {
    match format.kind.as_str() {
        "json_schema" => Some(ResponseFormat::JsonSchema {
            name: format.name.unwrap_or_else(|| "response".into()),
            schema: format.schema,
            strict: format.strict,
        }),
        "json_object" => Some(ResponseFormat::JsonObject),
        _ => None,
    }
}
