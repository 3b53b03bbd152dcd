//! The inbound-key gate (`auth.keys`): when keys are configured, a `/v1`, `/titles` or
//! `/metrics` request without one of them is answered 401 before any handler runs (so nothing
//! reaches the upstream and no concurrency slot is taken). The admin token also opens the titles
//! API, the inspector and `/metrics`.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::Credential;
use crate::error::ProxyError;
use crate::state::AppState;

const NEED_A_KEY: &str = "this proxy needs an API key: send `Authorization: Bearer <key>` or \
                          `x-api-key: <key>` with a key its operator gave you";

/// For the proxied `/v1` routes (`server::layers`, which renders the refusal in the route's
/// shape).
pub fn require_key(state: &AppState, headers: &HeaderMap) -> Result<(), ProxyError> {
    if state.inbound_keys.required() && !state.inbound_keys.admit(Credential::of(headers)) {
        return Err(ProxyError::Unauthorized(NEED_A_KEY));
    }
    Ok(())
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
