//! Every other `/v1/*` route (models, embeddings, …) forwarded to the upstream unchanged, so the
//! proxy can be an agent's only base URL. The path is taken raw from the request target and made
//! safe by `upstream_path` (never from a decoded `Path` extractor, which would let `%2e%2e` climb).

use axum::Extension;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::routes::extract::read_body;
use crate::routes::headers::{client_headers, upstream_headers};
use crate::routes::passthrough_body::PassthroughBody;
use crate::routes::upstream_path::{forwardable_query, relative_path};
use crate::routes::{RequestId, ResponseFacts};
use crate::state::AppState;
use crate::upstream::{Outbound, is_event_stream};

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    request: Request,
) -> Response {
    forward(&state, &id, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `/harness/{name}/v1/*`: the harness does not change a forwarded request.
pub async fn path_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    request: Request,
) -> Response {
    forward(&state, &id, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// What follows `/v1/` in `/v1/…` or `/harness/{name}/v1/…`, still percent-encoded.
fn after_v1(path: &str) -> Option<&str> {
    if let Some(rest) = path.strip_prefix("/v1/") {
        return Some(rest);
    }
    let (_name, rest) = path.strip_prefix("/harness/")?.split_once('/')?;
    rest.strip_prefix("v1/")
}

async fn forward(
    state: &AppState,
    id: &RequestId,
    request: Request,
) -> Result<Response, ProxyError> {
    let (parts, body) = request.into_parts();
    let raw = after_v1(parts.uri.path()).ok_or_else(|| ProxyError::NotFound {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
    })?;
    let mut path = relative_path(raw).map_err(|err| ProxyError::InvalidRequest {
        message: format!("invalid path: {err}"),
        param: None,
        code: "invalid_path",
    })?;
    if state.config.upstream.wire == crate::config::Wire::Messages {
        // A Messages upstream's base URL is its root: `/v1` is the client's path's own.
        path.insert_str(0, "/v1");
    }
    let body = read_body(&parts.headers, body, state.config.limits.max_body_bytes).await?;
    // The client's parameters, never one named like a credential.
    if let Some(query) = parts.uri.query().and_then(forwardable_query) {
        path.push('?');
        path.push_str(&query);
    }
    let outbound = Outbound {
        method: parts.method.clone(),
        path,
        headers: upstream_headers(&parts.headers, &state.harness_header, false, &id.0),
        body: body.into(),
        client_authorization: parts.headers.get(header::AUTHORIZATION).cloned(),
        dispatched: None,
        messages: false,
    };
    let upstream = state.upstream.send(outbound).await?;
    let sse = is_event_stream(&upstream.headers);
    let mut response = Response::new(Body::empty());
    *response.status_mut() = upstream.status;
    *response.headers_mut() = client_headers(&upstream.headers, false);
    response.extensions_mut().insert(ResponseFacts {
        harness: None,
        upstream_status: Some(upstream.status.as_u16()),
        protocol: None,
    });
    *response.body_mut() = PassthroughBody::new(upstream.body, sse)
        .max_line(state.config.limits.max_sse_event_bytes)
        .into_body();
    Ok(response)
}
