//! `POST /v1/responses` and `POST /harness/{name}/v1/responses`: the Responses front, through the
//! one pipeline of `chat::handle`. `GET` (Codex's WebSocket attempt) gets a fast 426 so the client
//! falls back to HTTP.

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::protocols::{self, ClientProtocol};
use crate::routes::RequestId;
use crate::routes::chat::{Front, handle};
use crate::state::AppState;

const FRONT: Front = Front {
    protocol: ClientProtocol::Responses,
    parse: protocols::responses::parse,
};

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, None, id, query, headers, body, FRONT).await
}

pub async fn path_route(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, Some(name), id, query, headers, body, FRONT).await
}

/// Responses over WebSocket is not served: 426, and Codex retries over HTTP at once.
pub async fn websocket() -> Response {
    ProxyError::UpgradeRequired(
        "Responses over WebSocket is not supported; use HTTP POST /v1/responses (Codex: supports_websockets = false)",
    )
    .into_response()
}
