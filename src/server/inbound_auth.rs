//! The inbound-key gate (`auth.keys`): when keys are configured, a `/v1`, `/titles` or
//! `/metrics` request without one of them is answered 401 before any handler runs (so nothing
//! reaches the upstream and no concurrency slot is taken). The admin token also opens the titles
//! API, the inspector and `/metrics`.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::Credential;
use crate::error::ProxyError;
use crate::routes::error_response::ErrorShape;
use crate::state::AppState;

const NEED_A_KEY: &str = "this proxy needs an API key: send `Authorization: Bearer <key>` or \
                          `x-api-key: <key>` with a key its operator gave you";

/// For the proxied `/v1` routes.
pub async fn require_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.inbound_keys.required() && !state.inbound_keys.admit(Credential::of(request.headers()))
    {
        return ErrorShape::of(request.extensions()).render(ProxyError::Unauthorized(NEED_A_KEY));
    }
    next.run(request).await
}

/// For the titles API, the inspector and `/metrics`: a key, or the admin token.
pub async fn require_key_or_admin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if state.inbound_keys.required() {
        let credential = Credential::of(request.headers());
        let admin = match (credential, state.config.auth.admin_token.as_deref()) {
            (Some(credential), Some(token)) => credential.is(token),
            _ => false,
        };
        if !admin && !state.inbound_keys.admit(credential) {
            return ProxyError::Unauthorized(NEED_A_KEY).into_response();
        }
    }
    next.run(request).await
}
