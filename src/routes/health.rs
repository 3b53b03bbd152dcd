//! `/healthz` (the process answers), `/readyz` (ready for traffic: not draining, and the title
//! store writable — see `titles::upkeep::StoreHealth` for why a down Redis stays ready) and
//! `/metrics`.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

pub async fn healthz() -> Response {
    json(StatusCode::OK, r#"{"status":"ok"}"#)
}

pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.is_draining() {
        return json(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"draining"}"#);
    }
    let store = state.titles.store_health().await;
    let (status, word) = if store.ready {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "title store unreachable")
    };
    let body = serde_json::json!({"status": word, "title_store": store}).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub async fn metrics(State(state): State<AppState>) -> Response {
    let text = state
        .metrics
        .as_ref()
        .map(metrics_exporter_prometheus::PrometheusHandle::render)
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

fn json(status: StatusCode, body: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
