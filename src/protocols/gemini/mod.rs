//! The Gemini API (`/v1beta/models/{model}:streamGenerateContent`, what Gemini CLI speaks):
//! `request` types the wire request, `convert` turns it into the conversation model, `schema`
//! converts Google's schema subset, `render` turns the answer events back into Gemini SSE or one
//! `GenerateContentResponse`, `error` owns Google's error shape, `models` the model list. Here:
//! the front's parse (model and stream flag from the path), its credential (`x-goog-api-key` or
//! `?key=`, `adopt`), its passthrough path, and `:countTokens`' request and estimate.
//!
//! Gemini CLI's helper calls (a non-streaming `:generateContent` asking for JSON with no tools:
//! next-speaker check, loop detection, edit correction) are marked `ClientInfo::aside`: forwarded
//! as plain Chat Completions, never rebuilt, never titled. The protocol implies no client
//! profile: the tool dialect is detected from the request's headers like any client's.
//!
//! Pure and synchronous: no I/O, no axum, no harness or client-dialect rule.

pub mod convert;
pub mod error;
pub mod models;
pub mod render;
pub mod request;
pub mod schema;
#[cfg(test)]
mod tests;

use http::HeaderValue;
use http::request::Parts;

use self::render::GeminiRenderer;
use self::request::GenerateContentRequest;
use super::{Inbound, Request};
use crate::conversation::{Conversation, Item, Part, ToolDefinition};
use crate::error::ProxyError;

/// The Gemini API, as `routes::FRONTS` serves it.
pub const PROTOCOL: super::ClientProtocol = super::ClientProtocol::named("gemini");

/// The streaming method; `generateContent` answers with one JSON.
pub const STREAM: &str = "streamGenerateContent";
pub const GENERATE: &str = "generateContent";
pub const COUNT_TOKENS: &str = "countTokens";

/// The Gemini API's key header.
pub const KEY_HEADER: &str = "x-goog-api-key";

/// The front's parse: the route puts the path's `model` and `action` in the parameters.
pub fn parse(request: &Request<'_>) -> Result<Inbound, ProxyError> {
    parse_with(request, format!("resp_{}", uuid::Uuid::new_v4().simple()))
}

/// `parse` with a given response id (golden tests).
pub fn parse_with(request: &Request<'_>, response_id: String) -> Result<Inbound, ProxyError> {
    let model = request.param("model").unwrap_or_default().to_owned();
    let stream = request.param("action") == Some(STREAM);
    let wire = read(request.body)?;
    let include_thoughts = convert::includes_thoughts(&wire);
    let converted = wire.into_conversation(model.clone(), stream);
    let mut conversation = converted.conversation;
    conversation.client.aside = is_helper_call(&conversation)
        || (is_gemini_cli(request.headers) && !stream && conversation.tools.is_empty());
    let renderer = GeminiRenderer::new(model, response_id, include_thoughts);
    Ok(Inbound {
        conversation,
        renderer: Some(Box::new(renderer)),
        dropped_tools: converted.dropped_tools,
    })
}

/// Gemini CLI's helper calls: one JSON answer asked for, no tools offered.
/// Gemini CLI streams every turn of its conversation: a call of its that does not stream and
/// offers no tools is one of its helpers, JSON or not (its session summary is plain text).
fn is_gemini_cli(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::USER_AGENT)
        .is_some_and(|ua| ua.as_bytes().starts_with(b"GeminiCLI"))
}

fn is_helper_call(conversation: &Conversation) -> bool {
    !conversation.options.stream
        && conversation.tools.is_empty()
        && conversation
            .options
            .response_format
            .as_ref()
            .is_some_and(|f| {
                matches!(
                    f,
                    crate::conversation::ResponseFormat::JsonObject
                        | crate::conversation::ResponseFormat::JsonSchema { .. }
                )
            })
}

/// Reads a `GenerateContentRequest`, saying where it is broken. Unknown fields are ignored.
pub fn read(body: &[u8]) -> Result<GenerateContentRequest, ProxyError> {
    super::read_request(body, "generateContent")
}

/// `passthrough`: the upstream's own path for this request, the API version the client used.
pub fn upstream_path(request: &Request<'_>) -> String {
    format!(
        "/{}/models/{}:{}",
        request.param("version").unwrap_or("v1beta"),
        request.param("model").unwrap_or_default(),
        request.param("action").unwrap_or_default(),
    )
}

/// The Gemini credential read into the proxy's: `x-goog-api-key`, else `?key=`, becomes
/// `x-api-key` (unless the client sent `Authorization` or `x-api-key`), and `key` leaves the
/// query, so no log, inspector or upstream URL ever holds it.
pub fn adopt(parts: &mut Parts) {
    let split = parts.uri.query().map(split_key);
    let from_query = split.and_then(|(key, rest)| {
        let mut uri = parts.uri.path().to_owned();
        if !rest.is_empty() {
            uri.push('?');
            uri.push_str(&rest);
        }
        if let Ok(rebuilt) = uri.parse() {
            parts.uri = rebuilt;
        }
        key
    });
    let from_header = parts.headers.remove(KEY_HEADER);
    let key = from_header.or_else(|| from_query.and_then(|k| HeaderValue::from_str(&k).ok()));
    let has_own = parts.headers.contains_key(http::header::AUTHORIZATION)
        || parts.headers.contains_key("x-api-key");
    if let Some(mut key) = key
        && !has_own
    {
        key.set_sensitive(true);
        parts.headers.insert("x-api-key", key);
    }
}

/// The decoded `key` of a query, and the query without it.
fn split_key(query: &str) -> (Option<String>, String) {
    let mut key = None;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("key", value)) => {
                let value = value.replace('+', " ");
                key = Some(
                    percent_encoding::percent_decode_str(&value)
                        .decode_utf8_lossy()
                        .into_owned(),
                );
            }
            _ if pair == "key" => {}
            _ => rest.push(pair),
        }
    }
    (key, rest.join("&"))
}

/// `:countTokens`'s request as the conversation it counts: `{generateContentRequest}` or the
/// bare `{contents, …}`, for `model` (the path's: the identity line a harness writes names it).
pub fn count_conversation(body: &[u8], model: &str) -> Result<Conversation, ProxyError> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Wrapped {
        generate_content_request: Option<GenerateContentRequest>,
    }
    let wrapped: Option<Wrapped> = serde_json::from_slice(body).ok();
    let request = match wrapped.and_then(|w| w.generate_content_request) {
        Some(request) => request,
        None => read(body)?,
    };
    Ok(request
        .into_conversation(model.to_owned(), true)
        .conversation)
}

/// `:countTokens` of the client's request as it is (`passthrough`): the estimated input tokens,
/// by the Messages front's estimator (`messages::tokens`). A rewriting harness's count is of its
/// rebuilt body instead (`routes::gemini`).
pub fn count_tokens(body: &[u8]) -> Result<usize, ProxyError> {
    Ok(estimate(&count_conversation(body, "")?))
}

fn estimate(conversation: &Conversation) -> usize {
    use super::messages::tokens::{PER_IMAGE, PER_MESSAGE, PER_TOOL, count};
    let parts = |parts: &[Part]| -> usize {
        parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => count(text),
                Part::Image(_) => PER_IMAGE,
                Part::Other(value) => count(&value.to_string()),
            })
            .sum()
    };
    let content = |content: &crate::conversation::Content| match content {
        crate::conversation::Content::Text(text) => count(text),
        crate::conversation::Content::Parts(list) => parts(list),
    };
    let mut total = 0;
    for item in &conversation.items {
        total += PER_MESSAGE
            + match item {
                Item::Message(message) => content(&message.content),
                Item::Reasoning(reasoning) => count(&reasoning.text),
                Item::ToolCall(call) => count(&call.name) + count(&call.input.as_arguments()),
                Item::ToolResult(result) => content(&result.content),
            };
    }
    for tool in &conversation.tools {
        if let ToolDefinition::Function(function) = tool {
            total += PER_TOOL + count(&function.name);
            total += function.description.as_deref().map_or(0, count);
            total += function
                .parameters
                .as_ref()
                .map_or(0, |p| count(&p.to_string()));
        }
    }
    total
}
