//! The live console: `GET /ui` and its two static files, compiled into the binary from `ui/` (no
//! build step, nothing fetched from elsewhere), and `GET /ui/api/inspect`, the caller's entries of
//! the request inspector. The page reads `/titles` itself; both are scoped to the caller's key.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::state::AppState;

const INDEX: &str = include_str!("../../ui/index.html");
const SCRIPT: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/style.css");

/// Only the proxy's own origin: no inline script, nothing from another host.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

pub async fn page() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

/// The caller's latest requests, newest first; `enabled: false` (and no data) when the inspector
/// is off, so the page can say how to turn it on.
pub async fn inspect(State(state): State<AppState>, headers: HeaderMap) -> Response {
    // The same rule as `/titles`: without a credential every caller would share one scope.
    let caller = match super::titles::credentialed_caller(
        &state,
        &headers,
        "the inspector shows a caller the requests made with its own credential: \
         send it (`Authorization` or `x-api-key`)",
    ) {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    let (enabled, data) = match &state.inspect {
        Some(inspector) => (true, inspector.list(caller.scope())),
        None => (false, Vec::new()),
    };
    let mut response =
        axum::Json(json!({"object": "list", "enabled": enabled, "data": data})).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
