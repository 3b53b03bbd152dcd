//! The Anthropic Messages front (Claude Code): `POST /v1/messages` and
//! `/harness/{name}/v1/messages` through the one pipeline (`chat::handle`), `count_tokens` answered
//! locally, the base-URL probes, and `AnthropicError`, the proxy's errors in Anthropic's shape.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::protocols::ClientProtocol;
use crate::protocols::messages::{self, error as anthropic};
use crate::routes::chat;
use crate::routes::front::{Call, Front};
use crate::routes::proxy::read_body;
use crate::state::AppState;

pub const FRONT: Front = Front {
    error: |err| AnthropicError(err).into_response(),
    upstream_error: Some(|status, body| anthropic::reshape(status.as_u16(), body)),
    ..Front::openai(
        ClientProtocol::Messages,
        |request| messages::parse(request.body, request.headers),
        |_| "/messages".to_owned(),
    )
};

/// Claude Code's session header; the conversation id of its requests.
const SESSION_HEADER: &str = "x-claude-code-session-id";

/// A `ProxyError` in Anthropic's shape `{"type":"error","error":{"type","message"}}`, rendered
/// once; the proxy's own overload (a full limiter, 503) is Anthropic's `529 overloaded_error`.
pub struct AnthropicError(pub ProxyError);

impl From<ProxyError> for AnthropicError {
    fn from(err: ProxyError) -> Self {
        Self(err)
    }
}

impl IntoResponse for AnthropicError {
    fn into_response(self) -> Response {
        let overload = self.0.is_overload();
        self.0.render_with(|facts| {
            let status = if overload {
                StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
            } else {
                facts.status
            };
            let kind = anthropic::error_type(status.as_u16());
            (status, anthropic::body_for(kind, facts.message))
        })
    }
}

pub async fn route(State(state): State<AppState>, mut call: Call, body: Body) -> Response {
    let body = match read_body(&call.headers, body, state.config.limits.max_body_bytes).await {
        Ok(body) => body,
        Err(err) => return AnthropicError(err).into_response(),
    };
    // Without the session header the conversation id comes from `metadata.user_id`.
    if !call.headers.contains_key(SESSION_HEADER)
        && let Some(value) =
            messages::session_id(&body).and_then(|s| HeaderValue::from_str(&s).ok())
    {
        call.headers.insert(SESSION_HEADER, value);
    }
    chat::handle(state, FRONT, call, Body::from(body)).await
}

/// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, a local estimate of the request as
/// the harness sends it upstream (`rewritten_tokens`, `protocols::messages::tokens`); Claude Code's `/context` breaks on a 404 here. More counts at
/// once than `limits.max_token_counts` get 529 `overloaded_error`.
pub async fn count_tokens(
    State(state): State<AppState>,
    call: Call,
    body: Body,
) -> Result<Response, AnthropicError> {
    let body = read_body(&call.headers, body, state.config.limits.max_body_bytes).await?;
    let harness = chat::pick_harness(&state, &call)?;
    // Counting is CPU-bound (linear in the body): off the async workers, one per core at a time
    // (`limits.max_token_counts`); beyond that the client is told to retry (529 on this route).
    let Some(permit) = state.token_count_slot().await else {
        return Err(ProxyError::Busy("token counts running at once").into());
    };
    let tokens = tokio::task::spawn_blocking(move || {
        let tokens = rewritten_tokens(harness.as_ref(), &call, &body);
        drop(permit);
        tokens
    })
    .await
    .map_err(ProxyError::internal)??;
    let json = serde_json::json!({ "input_tokens": tokens }).to_string();
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response())
}

/// The request's input tokens as its harness sends it upstream: a rewriting harness replaces
/// the client's system prompt and tools with its own (Claude Code's ~20k-token prompt becomes
/// opencode's), so the count is of the rebuilt Chat Completions body; passthrough counts the
/// client's request as it is.
fn rewritten_tokens(
    harness: &dyn crate::harness::Harness,
    call: &Call,
    body: &bytes::Bytes,
) -> Result<usize, ProxyError> {
    if !harness.rewrites() {
        return Ok(messages::tokens::estimate(&messages::read(body)?));
    }
    let inbound = (FRONT.parse)(&call.request(body))?;
    let prepared = harness.prepare(crate::harness::HarnessRequest {
        conversation: inbound.conversation,
        chat_body: None,
        headers: &call.headers,
        now: chrono::Utc::now(),
    })?;
    Ok(crate::protocols::chat::tokens::estimate(
        &prepared.upstream_body,
    ))
}

/// `HEAD`/`GET` on the base URL (and Claude Code's `/api/hello` probe): the proxy is there.
pub async fn hello() -> StatusCode {
    StatusCode::OK
}
