//! Anthropic Messages (`/v1/messages`, Claude Code's protocol): `request` types the wire request,
//! `convert` turns it into the conversation model (no Chat Completions request between), `render`
//! turns the answer events back into Messages SSE or one `message` JSON, `error` owns Anthropic's
//! error shape, `tokens` the `count_tokens` estimate. Pure and synchronous: no I/O, no axum, no
//! harness or client-dialect rule.

pub mod convert;
pub mod error;
pub mod render;
pub mod request;
pub mod tokens;

use bytes::Bytes;
use http::HeaderMap;

use self::render::MessagesRenderer;
use self::request::MessagesRequest;
use super::Inbound;
use crate::error::ProxyError;

/// Anthropic Messages, as `routes::FRONTS` serves it.
pub const PROTOCOL: super::ClientProtocol = super::ClientProtocol::named("messages");

/// The `ParseFn` of the Messages front.
pub fn parse(body: &Bytes, _headers: &HeaderMap) -> Result<Inbound, ProxyError> {
    let request = read(body)?;
    let renderer = MessagesRenderer::new(
        format!("msg_{}", uuid::Uuid::new_v4().simple()),
        request.model.clone(),
    );
    let converted = request.into_conversation();
    let conversation = converted.conversation;
    // The route turns `metadata.user_id`'s session into the session header before parsing.
    // No profile implied: Claude Code is known by its headers or its tools (`clients::profiles`).
    Ok(Inbound {
        conversation,
        renderer: Some(Box::new(renderer)),
        dropped_tools: converted.dropped_tools,
    })
}

/// Reads a Messages request, saying where it is broken. Unknown fields are ignored.
pub fn read(body: &[u8]) -> Result<MessagesRequest, ProxyError> {
    super::read_request(body, "messages")
}

/// The conversation id a Messages body carries in `metadata.user_id` (Claude Code: a JSON text
/// with `session_id`), for a client that sent no session header. Cheap enough to run on every
/// request: only `metadata` is kept, everything else is skipped.
pub fn session_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct OnlyMetadata {
        metadata: Option<request::Metadata>,
    }
    let only: OnlyMetadata = serde_json::from_slice(body).ok()?;
    only.metadata?.session_id()
}

#[cfg(test)]
mod tests;
