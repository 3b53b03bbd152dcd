//! `POST /v1/chat/completions` and `POST /harness/{name}/v1/chat/completions`: the Chat
//! Completions front, through the one pipeline (`pipeline::serve`).

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;

use crate::protocols::chat::UPSTREAM_PATH;
use crate::routes::front::{Call, Front, Mount};
use crate::routes::pipeline::serve;
use crate::state::AppState;

pub async fn default_route(State(state): State<AppState>, call: Call, body: Body) -> Response {
    serve(state, FRONT, call, body).await
}

/// Chat Completions: the client's body is the model's source, its upstream path the same.
pub const FRONT: Front = Front::openai(
    crate::protocols::chat::PROTOCOL,
    routes,
    |request| crate::protocols::chat::request::parse(request.body, request.headers),
    |_| UPSTREAM_PATH.to_owned(),
);

fn routes(_: &Mount<'_>) -> Router<AppState> {
    Router::new()
        .route("/v1/chat/completions", post(default_route))
        .route("/harness/{name}/v1/chat/completions", post(default_route))
}
