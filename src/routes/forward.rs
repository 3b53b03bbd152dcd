//! Every other `/v1/*` route (models, embeddings, …) forwarded to the upstream unchanged, so the
//! proxy can be an agent's only base URL.

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ProxyError;
use crate::routes::proxy::{
    PassthroughBody, client_headers, is_event_stream, read_body, upstream_headers,
};
use crate::routes::{RequestId, ResponseFacts};
use crate::state::AppState;
use crate::upstream::Outbound;

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    forward(&state, &id, &rest, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

pub async fn path_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    Path((_harness, rest)): Path<(String, String)>,
    request: Request,
) -> Response {
    forward(&state, &id, &rest, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn forward(
    state: &AppState,
    id: &RequestId,
    rest: &str,
    request: Request,
) -> Result<Response, ProxyError> {
    let (parts, body) = request.into_parts();
    let body = read_body(&parts.headers, body, state.config.limits.max_body_bytes).await?;
    let mut path = format!("/{}", rest.trim_start_matches('/'));
    if let Some(query) = parts.uri.query() {
        path.push('?');
        path.push_str(query);
    }
    let outbound = Outbound {
        method: parts.method.clone(),
        path,
        headers: upstream_headers(&parts.headers, &state.harness_header, false, &id.0),
        body,
        client_authorization: parts.headers.get(header::AUTHORIZATION).cloned(),
        dispatched: None,
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
    *response.body_mut() = PassthroughBody::new(upstream.body, sse).into_body();
    Ok(response)
}
