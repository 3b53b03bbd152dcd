//! `POST /v1/responses` and `POST /harness/{name}/v1/responses`: the Responses front, through the
//! one pipeline of `chat::handle`. `GET` (Codex's WebSocket) is `responses_ws`'s, which sends each
//! message here as a `POST`.

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;

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
