//! The Anthropic Messages front (Claude Code): `POST /v1/messages` and
//! `/harness/{name}/v1/messages` through the one pipeline (`chat::handle`), `count_tokens` answered
//! locally, the base-URL probes, and the route layer that gives every error on these routes
//! Anthropic's shape.

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::error::{ErrorCode, ProxyError};
use crate::protocols::ClientProtocol;
use crate::protocols::messages::{self, error as anthropic};
use crate::routes::RequestId;
use crate::routes::chat::{self, Front};
use crate::routes::proxy::read_body;
use crate::state::AppState;

const FRONT: Front = Front {
    protocol: ClientProtocol::Messages,
    parse: messages::parse,
};

/// Claude Code's session header; the conversation id of its requests.
const SESSION_HEADER: &str = "x-claude-code-session-id";

/// Longest error body reshaped (an upstream's error page is cut there).
const MAX_ERROR_BODY: usize = 64 * 1024;

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, None, id, query, headers, body).await
}

pub async fn path_route(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, Some(name), id, query, headers, body).await
}

async fn handle(
    state: AppState,
    harness: Option<String>,
    id: RequestId,
    query: Option<String>,
    mut headers: HeaderMap,
    body: Body,
) -> Response {
    let body = match read_body(&headers, body, state.config.limits.max_body_bytes).await {
        Ok(body) => body,
        Err(err) => return err.into_response(),
    };
    // Without the session header the conversation id comes from `metadata.user_id`.
    if !headers.contains_key(SESSION_HEADER)
        && let Some(value) =
            messages::session_id(&body).and_then(|s| HeaderValue::from_str(&s).ok())
    {
        headers.insert(SESSION_HEADER, value);
    }
    chat::handle(state, harness, id, query, headers, Body::from(body), FRONT).await
}

/// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, a local estimate (see
/// `protocols::messages::tokens`); Claude Code's `/context` breaks on a 404 here. More counts at
/// once than `limits.max_token_counts` get 529 `overloaded_error`.
pub async fn count_tokens(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ProxyError> {
    let body = read_body(&headers, body, state.config.limits.max_body_bytes).await?;
    let request = messages::read(&body)?;
    // Counting is CPU-bound (linear in the body): off the async workers, one per core at a time
    // (`limits.max_token_counts`); beyond that the client is told to retry (529 on this route).
    let Ok(permit) = state.token_counts.clone().try_acquire_owned() else {
        return Err(ProxyError::Busy("token counts running at once"));
    };
    let tokens = tokio::task::spawn_blocking(move || {
        let tokens = messages::tokens::estimate(&request);
        drop(permit);
        tokens
    })
    .await
    .map_err(|e| ProxyError::Internal(e.to_string()))?;
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

pub async fn count_tokens_path(
    state: State<AppState>,
    Path(_name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ProxyError> {
    count_tokens(state, headers, body).await
}

/// `HEAD`/`GET` on the base URL (and Claude Code's `/api/hello` probe): the proxy is there.
pub async fn hello() -> StatusCode {
    StatusCode::OK
}

/// Route layer: any error answer on the Messages routes — the proxy's own `ProxyError` or the
/// upstream's, passed through — in Anthropic's shape, headers kept. The proxy's own overload
/// (the concurrency limiter's 503) is Anthropic's `529 overloaded_error`.
pub async fn anthropic_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !status.is_client_error() && !status.is_server_error() {
        return response;
    }
    // A compressed body (a Messages upstream's, passed through) is left as it came.
    if response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    let own_overload = response
        .extensions()
        .get::<ErrorCode>()
        .is_some_and(|code| code.0 == "overloaded");
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ERROR_BODY)
        .await
        .unwrap_or_else(|_| Bytes::new());
    if own_overload {
        parts.status = StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    }
    let reshaped = anthropic::reshape(parts.status.as_u16(), &bytes);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(reshaped))
}
