//! `POST /v1/responses` and `POST /harness/{name}/v1/responses`: the Responses front, through the
//! one pipeline (`pipeline::serve`). `GET` (Codex's WebSocket) is `responses_ws`'s, which sends each
//! message here as a `POST`, through the same layers (`Mount::layered`).

use axum::body::Body;
use axum::extract::State;
use axum::handler::Handler;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::protocols;
use crate::routes::front::{Call, Front, Mount};
use crate::routes::pipeline::serve;
use crate::routes::responses_ws::{Frames, upgrade};
use crate::state::AppState;

pub const FRONT: Front = Front {
    stream_error: protocols::responses::render::stream_error,
    ..Front::openai(
        protocols::responses::PROTOCOL,
        routes,
        |request| protocols::responses::parse(request.body, request.headers),
        |_| "/responses".to_owned(),
    )
};

pub async fn route(State(state): State<AppState>, call: Call, body: Body) -> Response {
    serve(state, FRONT, call, body).await
}

/// The `POST` routes, and on the same paths the WebSocket upgrade, whose messages go to those
/// `POST` routes behind every layer an HTTP request passes.
fn routes(mount: &Mount<'_>) -> Router<AppState> {
    let posts = || {
        Router::new()
            .route("/v1/responses", post(route))
            .route("/harness/{name}/v1/responses", post(route))
    };
    let frames = Frames((mount.layered)(posts()));
    let socket = || get(upgrade.layer(Extension(frames.clone())));
    Router::new()
        .route("/v1/responses", post(route).merge(socket()))
        .route("/harness/{name}/v1/responses", post(route).merge(socket()))
}
