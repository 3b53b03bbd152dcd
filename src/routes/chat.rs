//! `POST /v1/chat/completions` and `POST /harness/{name}/v1/chat/completions`: pick the harness,
//! let it prepare the upstream request, send it, and answer in the shape the client asked for.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::api::error::sse_error_event;
use crate::error::ProxyError;
use crate::harness::{HarnessRequest, Prepared};
use crate::response::{FoldError, Folder, Reshape, ResponsePlan, Shaper};
use crate::routes::proxy::{
    PassthroughBody, client_headers, is_event_stream, read_body, upstream_headers,
};
use crate::server::RequestId;
use crate::server::access_log::ResponseFacts;
use crate::state::AppState;
use crate::upstream::{BodyStream, Outbound, UpstreamError, UpstreamResponse};

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, None, id, query, headers, body).await
}

pub async fn path_route(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, Some(name), id, query, headers, body).await
}

async fn handle(
    state: AppState,
    path_harness: Option<String>,
    id: RequestId,
    query: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let name = headers
        .get(state.config.harness_header.as_str())
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or(path_harness)
        .unwrap_or_else(|| state.config.default_harness.clone());
    let Some(harness) = state.harnesses.get(&name).cloned() else {
        return ProxyError::UnknownHarness {
            name,
            known: state.harnesses.names(),
        }
        .into_response();
    };
    let mut facts = ResponseFacts {
        harness: Some(harness.name()),
        upstream_status: None,
    };
    let mut response = match serve(
        &state,
        harness.as_ref(),
        &id,
        query,
        &headers,
        body,
        &mut facts,
    )
    .await
    {
        Ok(response) => response,
        Err(err) => err.into_response(),
    };
    response
        .headers_mut()
        .insert("x-harness", HeaderValue::from_static(harness.name()));
    response.extensions_mut().insert(facts);
    response
}

async fn serve(
    state: &AppState,
    harness: &dyn crate::harness::Harness,
    id: &RequestId,
    query: Option<String>,
    headers: &HeaderMap,
    body: Body,
    facts: &mut ResponseFacts,
) -> Result<Response, ProxyError> {
    let body = read_body(headers, body, state.config.limits.max_body_bytes).await?;
    let prepared = harness.prepare(&HarnessRequest {
        body: &body,
        headers,
        now: chrono::Utc::now(),
    })?;
    let Prepared {
        upstream_body,
        response: plan,
        response_headers,
        facts: _,
    } = prepared;
    let rewritten = upstream_body.is_some();
    let path = match query {
        Some(q) => format!("/chat/completions?{q}"),
        None => "/chat/completions".to_owned(),
    };
    let outbound = Outbound {
        method: Method::POST,
        path,
        headers: upstream_headers(
            headers,
            &state.config.harness_header.parse().unwrap_or(header::HOST),
            rewritten,
            &id.0,
        ),
        body: upstream_body.unwrap_or(body),
        client_authorization: headers.get(header::AUTHORIZATION).cloned(),
    };
    let upstream = state.upstream.send(outbound).await?;
    facts.upstream_status = Some(upstream.status.as_u16());
    let mut response = respond(upstream, plan).await?;
    for (name, value) in response_headers {
        response.headers_mut().insert(name, value);
    }
    Ok(response)
}

/// Maps the upstream answer to the client's: errors and passthrough untouched, otherwise reshaped.
async fn respond(upstream: UpstreamResponse, plan: ResponsePlan) -> Result<Response, ProxyError> {
    let UpstreamResponse {
        status,
        headers,
        body,
    } = upstream;
    let sse = is_event_stream(&headers);
    let reshape = match plan {
        ResponsePlan::Reshape(reshape) if status.is_success() => reshape,
        ResponsePlan::Passthrough | ResponsePlan::Reshape(_) => {
            return Ok(build(
                status,
                client_headers(&headers, false),
                PassthroughBody::new(body, sse).into_body(),
            ));
        }
    };
    let mut out_headers = client_headers(&headers, true);
    let Reshape {
        client_stream,
        include_usage,
    } = reshape;
    if client_stream {
        out_headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        out_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let stream: Body = if sse {
            Body::from_stream(ShapedBody::new(body, Shaper::new(include_usage)))
        } else {
            // The upstream ignored `stream: true`; turn its one JSON answer into events.
            let json = collect(body).await?;
            Body::from(crate::response::synthetic::completion_to_sse(
                &json,
                include_usage,
            ))
        };
        return Ok(build(status, out_headers, stream));
    }
    out_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if !sse {
        return Ok(build(
            status,
            out_headers,
            PassthroughBody::new(body, false).into_body(),
        ));
    }
    let folded = fold(body).await?;
    let json = serde_json::to_vec(&folded).map_err(|e| ProxyError::Internal(e.to_string()))?;
    Ok(build(status, out_headers, Body::from(json)))
}

fn build(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

async fn collect(mut body: BodyStream) -> Result<Bytes, ProxyError> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(Bytes::from(out))
}

async fn fold(mut body: BodyStream) -> Result<crate::api::stream::Completion, ProxyError> {
    let mut folder = Folder::new();
    while let Some(chunk) = body.next().await {
        folder.push(&chunk?).map_err(fold_error)?;
    }
    folder.finish("").map_err(fold_error)
}

fn fold_error(err: FoldError) -> ProxyError {
    match err {
        FoldError::BadChunk(message) => ProxyError::Upstream(UpstreamError::Interrupted(format!(
            "failed to parse chat completions chunk: {message}"
        ))),
        FoldError::Upstream(error) => {
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("the upstream reported an error");
            ProxyError::Upstream(UpstreamError::Interrupted(message.to_owned()))
        }
    }
}

/// A reshaped SSE body: upstream chunks in, shaped events out, one error event if the upstream fails.
struct ShapedBody {
    inner: BodyStream,
    shaper: Shaper,
    queue: VecDeque<Bytes>,
    done: bool,
}

impl ShapedBody {
    fn new(inner: BodyStream, shaper: Shaper) -> Self {
        Self {
            inner,
            shaper,
            queue: VecDeque::new(),
            done: false,
        }
    }
}

impl Stream for ShapedBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(bytes) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(bytes)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let mut out = Vec::new();
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.shaper.push(&chunk, &mut out),
                Poll::Ready(Some(Err(err))) => {
                    this.done = true;
                    metrics::counter!("harness_proxy_upstream_stream_errors_total").increment(1);
                    tracing::warn!(code = err.code(), error = %err, "upstream failed mid-stream");
                    out.push(Bytes::from(sse_error_event(&err.to_string(), err.code())));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    this.shaper.finish(&mut out);
                }
                Poll::Pending => return Poll::Pending,
            }
            this.queue.extend(out);
        }
    }
}
