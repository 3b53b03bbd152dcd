//! The Anthropic Messages front (Claude Code): `POST /v1/messages` and
//! `/harness/{name}/v1/messages` through the one pipeline (`pipeline::serve`), `count_tokens` answered
//! locally, the base-URL probes, and `AnthropicError`, the proxy's errors in Anthropic's shape.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};

use crate::error::ProxyError;
use crate::protocols::messages::{self, error as anthropic};
use crate::routes::count_tokens::{self, Counting};
use crate::routes::error_response;
use crate::routes::extract::read_body;
use crate::routes::front::{Call, Front, Mount, method_not_allowed};
use crate::routes::pipeline;
use crate::state::AppState;

pub const FRONT: Front = Front {
    error: |err| AnthropicError(err).into_response(),
    upstream_error: Some(|status, body| anthropic::reshape(status.as_u16(), body)),
    stream_error: anthropic::stream_error,
    ..Front::openai(
        messages::PROTOCOL,
        routes,
        |request| messages::parse(request.body, request.headers),
        |_| "/messages".to_owned(),
    )
};

/// `/v1/messages` and its `count_tokens`, a wrong method answered in Anthropic's shape.
fn routes(_: &Mount<'_>) -> Router<AppState> {
    let only = |handler: MethodRouter<AppState>| handler.fallback(method_not_allowed);
    Router::new()
        .route("/v1/messages", only(post(route)))
        .route("/harness/{name}/v1/messages", only(post(route)))
        .route("/v1/messages/count_tokens", only(post(count_tokens)))
        .route(
            "/harness/{name}/v1/messages/count_tokens",
            only(post(count_tokens)),
        )
}

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
        error_response::render(&self.0, |facts| {
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
    pipeline::serve(state, FRONT, call, Body::from(body)).await
}

/// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, a local estimate of the request as
/// the harness sends it upstream (`routes::count_tokens`, the Messages estimator
/// `protocols::messages::tokens`); Claude Code's `/context` breaks on a 404 here. More counts at
/// once than `limits.max_token_counts` get 529 `overloaded_error`.
pub async fn count_tokens(
    State(state): State<AppState>,
    call: Call,
    body: Body,
) -> Result<Response, AnthropicError> {
    let counting = Counting {
        as_sent: |body| Ok(messages::tokens::estimate(&messages::read(body)?)),
        conversation: |call, body| Ok((FRONT.parse)(&call.request(body))?.conversation),
    };
    let tokens = count_tokens::count(&state, call, body, counting).await?;
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

/// `HEAD`/`GET` on the base URL (and Claude Code's `/api/hello` probe): the proxy is there.
pub async fn hello() -> StatusCode {
    StatusCode::OK
}
