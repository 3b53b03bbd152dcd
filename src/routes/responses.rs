//! `POST /v1/responses` and `POST /harness/{name}/v1/responses`: the Responses front, through the
//! one pipeline of `chat::handle`. `GET` (Codex's WebSocket attempt) gets a fast 426 so the client
//! falls back to HTTP.

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::protocols::{self, ClientProtocol};
use crate::routes::chat::handle;
use crate::routes::front::{Call, Front};
use crate::state::AppState;

pub const FRONT: Front = Front::openai(
    ClientProtocol::Responses,
    |request| protocols::responses::parse(request.body, request.headers),
    |_| "/responses".to_owned(),
);

pub async fn route(State(state): State<AppState>, call: Call, body: Body) -> Response {
    handle(state, FRONT, call, body).await
}

/// Responses over WebSocket is not served: 426, and Codex retries over HTTP at once.
pub async fn websocket() -> Response {
    ProxyError::UpgradeRequired(
        "Responses over WebSocket is not supported; use HTTP POST /v1/responses (Codex: supports_websockets = false)",
    )
    .into_response()
}
