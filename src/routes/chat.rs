//! `POST /v1/chat/completions` and `POST /harness/{name}/v1/chat/completions`: pick the harness,
//! let it prepare the upstream request, send it, and answer in the shape the client asked for.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Extension;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::api::error::sse_error_event;
use crate::error::ProxyError;
use crate::harness::{ConversationFacts, HarnessRequest, Prepared};
use crate::protocols::chat::calls::{translate_completion, translate_completion_json};
use crate::protocols::chat::{CallMapper, FoldError, Folder, Reshape, ResponsePlan, Shaper};
use crate::protocols::{ClientProtocol, Inbound, Renderer};
use crate::routes::extract::PathParam;
use crate::routes::meter::Meter;
use crate::routes::proxy::{
    AnswerFinished, PassthroughBody, UNFINISHED, add_thread_headers, client_authorization,
    client_headers, is_event_stream, on_end, read_body, upstream_headers,
};
use crate::routes::{RequestId, ResponseFacts};
use crate::state::AppState;
use crate::titles::anchors::fresh_id;
use crate::titles::identity::{
    BadConversationId, Caller, client_conversation_id, conversation_id_with_key,
};
use crate::titles::{AfterAnswer, TurnInfo};
use crate::upstream::{BodyStream, Outbound, UpstreamError, UpstreamResponse};

pub async fn default_route(
    State(state): State<AppState>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, None, id, query, headers, body, Front::CHAT).await
}

pub async fn path_route(
    State(state): State<AppState>,
    PathParam(name): PathParam<String>,
    Extension(id): Extension<RequestId>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, Some(name), id, query, headers, body, Front::CHAT).await
}

/// The client protocol a route serves, and how its requests become Chat Completions requests.
#[derive(Clone, Copy)]
pub struct Front {
    pub protocol: ClientProtocol,
    /// `None` for Chat Completions itself.
    pub parse: Option<ParseFn>,
}

/// An inbound adapter's entry point: the client's body and headers → a Chat Completions request.
pub type ParseFn = fn(&Bytes, &HeaderMap) -> Result<Inbound, ProxyError>;

impl Front {
    pub const CHAT: Self = Self {
        protocol: ClientProtocol::Chat,
        parse: None,
    };
}

/// The one pipeline every client protocol goes through: pick the harness, parse the client's
/// protocol into a Chat Completions request, let the harness rebuild it, send it, and render the
/// answer in the client's protocol.
pub async fn handle(
    state: AppState,
    path_harness: Option<String>,
    id: RequestId,
    query: Option<String>,
    headers: HeaderMap,
    body: Body,
    front: Front,
) -> Response {
    let name = headers
        .get(&state.harness_header)
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
    let meter = Meter::start(harness.name(), front.protocol.name());
    let mut exchange = Exchange {
        facts: ResponseFacts {
            harness: Some(harness.name()),
            upstream_status: None,
            protocol: Some(front.protocol.name()),
        },
        conversation_id: None,
        after_answer: None,
    };
    let incoming = Incoming {
        id: &id,
        query,
        headers: &headers,
        front,
        meter: &meter,
    };
    let result = serve(&state, &harness, incoming, body, &mut exchange).await;
    let mut response = match result {
        Ok(response) => response,
        Err(err) => err.into_response(),
    };
    if let Some(title) = exchange.after_answer.take() {
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = on_end(body, move || title.start());
    }
    let out = response.headers_mut();
    out.insert("x-harness", HeaderValue::from_static(harness.name()));
    if let Some(conversation) = exchange
        .conversation_id
        .as_deref()
        .and_then(|c| HeaderValue::from_str(c).ok())
    {
        out.insert("x-conversation-id", conversation);
    }
    response.extensions_mut().insert(exchange.facts);
    meter.attach(&mut response);
    response
}

/// What `serve` learns on the way, kept even when it ends in an error.
struct Exchange {
    facts: ResponseFacts,
    conversation_id: Option<String>,
    /// A title to start once the answer's body has ended (or failed, or was abandoned), even
    /// when the answer is an error.
    after_answer: Option<AfterAnswer>,
}

/// What the client sent, as the pipeline sees it.
struct Incoming<'a> {
    id: &'a RequestId,
    query: Option<String>,
    headers: &'a HeaderMap,
    front: Front,
    meter: &'a Meter,
}

async fn serve(
    state: &AppState,
    harness: &std::sync::Arc<dyn crate::harness::Harness>,
    incoming: Incoming<'_>,
    body: Body,
    exchange: &mut Exchange,
) -> Result<Response, ProxyError> {
    let Incoming {
        id,
        query,
        headers,
        front,
        meter,
    } = incoming;
    let reading = std::time::Instant::now();
    let body = read_body(headers, body, state.config.limits.max_body_bytes).await;
    meter.waited(reading.elapsed());
    let body = body?;
    let client_body = body.clone();
    // A rewriting harness gets every protocol as Chat Completions; passthrough gets the bytes.
    let inbound = match front.parse {
        Some(parse) if harness.rewrites() => Some(parse(&body, headers)?),
        _ => None,
    };
    let profiled_headers;
    let (body, harness_headers) = match &inbound {
        Some(inbound) => {
            let headers = match inbound.conversation.client.profile {
                Some(profile) if !headers.contains_key("x-harness-client") => {
                    let mut with_profile = headers.clone();
                    with_profile.insert("x-harness-client", HeaderValue::from_static(profile));
                    profiled_headers = with_profile;
                    &profiled_headers
                }
                _ => headers,
            };
            // Bridge while the harnesses still read Chat Completions bytes: the conversation as a
            // plain chat request, always streamed (the renderer needs the events either way).
            let chat = crate::harness::plain::chat_request(&inbound.conversation, true);
            let bytes =
                serde_json::to_vec(&chat).map_err(|e| ProxyError::Internal(e.to_string()))?;
            (Bytes::from(bytes), headers)
        }
        None => (body, headers),
    };
    let prepared = prepare(state, harness, &body, harness_headers).await?;
    let Prepared {
        upstream_body,
        response: plan,
        response_headers,
        facts,
    } = prepared;
    let rewritten = upstream_body.is_some();

    let caller = Caller::from_headers(headers, state.config.auth.admin_token.as_deref());
    let titled = state.titles.applies_to(harness.name());
    // Passthrough does not parse; peek only when an id must be derived or a title may be due
    // (and only Chat Completions bodies: other protocols passed through are not read).
    let facts = facts.or_else(|| {
        (front.protocol == ClientProtocol::Chat && (titled || !has_conversation_header(headers)))
            .then(|| ConversationFacts::peek(&body))
            .flatten()
    });
    let body_key = inbound
        .as_ref()
        .and_then(|i| i.conversation.client.conversation_key.as_deref());
    let (conversation, started) = identify(
        state,
        headers,
        body_key,
        &caller.owner,
        facts.as_ref(),
        rewritten,
    )
    .map_err(|bad| ProxyError::InvalidRequest {
        message: bad.to_string(),
        param: Some(bad.header),
        code: "invalid_conversation_id",
    })?;
    exchange.conversation_id = Some(conversation.clone());
    let mut forwarded = upstream_headers(headers, &state.harness_header, rewritten, &id.0);
    if rewritten {
        add_thread_headers(&mut forwarded, &conversation);
    }

    let mut title = state
        .titles
        .begin(TurnInfo {
            owner: &caller.owner,
            conversation: &conversation,
            facts: facts.as_ref(),
            started,
            harness: harness.name(),
            protocol: front.protocol.name(),
            title_headers: &|| {
                let mut title_headers =
                    upstream_headers(headers, &state.harness_header, true, &id.0);
                add_thread_headers(&mut title_headers, &conversation);
                title_headers
            },
            client_authorization: client_authorization(headers, inbound.is_some()),
        })
        .await;
    exchange.after_answer = title.before_upstream().await;

    // A rewritten request is always Chat Completions; passthrough keeps the client's protocol.
    // A translated request's query belongs to the client's protocol (Claude Code's `?beta=true`),
    // not to Chat Completions: it is not forwarded.
    let translated = inbound.is_some();
    let upstream_path = if translated {
        ClientProtocol::Chat.upstream_path()
    } else {
        front.protocol.upstream_path()
    };
    let path = match query.filter(|_| !translated) {
        Some(q) => format!("{upstream_path}?{q}"),
        None => upstream_path.to_owned(),
    };
    let outbound = Outbound {
        method: Method::POST,
        path,
        headers: forwarded,
        body: upstream_body.unwrap_or(body),
        client_authorization: client_authorization(headers, translated),
        dispatched: None,
    };
    if let Some(inspector) = &state.inspect {
        inspector.record(&crate::inspect::Exchange {
            id: &id.0,
            owner: &caller.owner,
            conversation_id: &conversation,
            harness: harness.name(),
            protocol: front.protocol.name(),
            client: (
                &format!("/v1{}", front.protocol.upstream_path()),
                headers,
                &client_body,
            ),
            upstream: (&outbound.path, &outbound.headers, &outbound.body),
        });
    }
    let sending = std::time::Instant::now();
    let sent = state.upstream.send(outbound).await;
    let mut upstream = match sent {
        Ok(upstream) => {
            meter.upstream_head(sending.elapsed());
            upstream
        }
        Err(err) => {
            meter.waited(sending.elapsed());
            title.upstream_failed(&err);
            return Err(err.into());
        }
    };
    exchange.facts.upstream_status = Some(upstream.status.as_u16());
    upstream.body = meter.watch_upstream(std::mem::replace(
        &mut upstream.body,
        Box::pin(futures_util::stream::empty()),
    ));
    title.watch_answer(&mut upstream);
    let (render, dropped) = match inbound {
        Some(inbound) => (
            Some((inbound.renderer, inbound.conversation.options.stream)),
            inbound.dropped_tools,
        ),
        None => (None, Vec::new()),
    };
    let max_event = state.config.limits.max_sse_event_bytes;
    let mut response = respond(upstream, plan, render, max_event, front.protocol).await?;
    for (name, value) in response_headers {
        response.headers_mut().insert(name, value);
    }
    if !dropped.is_empty() {
        let mut list = response
            .headers()
            .get("x-harness-dropped-tools")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .unwrap_or_default();
        for name in dropped {
            if !list.is_empty() {
                list.push_str(", ");
            }
            list.push_str(&name);
        }
        if let Ok(value) = HeaderValue::from_str(&list) {
            response
                .headers_mut()
                .insert("x-harness-dropped-tools", value);
        }
    }
    count_dropped_tools(harness.name(), response.headers());
    if let Some(url) = title.url().and_then(|u| HeaderValue::from_str(u).ok()) {
        response.headers_mut().insert("x-title-url", url);
    }
    Ok(response)
}

/// Which conversation this turn belongs to, and whether it starts one. A client id wins; a
/// rewritten request without one continues the conversation whose first answered exchange its
/// history holds (`titles::anchors`), else starts a new one; passthrough, which never reads the
/// answer, keeps the id derived from the first user text.
fn identify(
    state: &AppState,
    headers: &HeaderMap,
    body_key: Option<&str>,
    owner: &str,
    facts: Option<&ConversationFacts>,
    rewritten: bool,
) -> Result<(String, bool), BadConversationId> {
    if let Some(id) = client_conversation_id(headers, body_key)? {
        return Ok((id, false));
    }
    Ok(match facts {
        Some(facts) if rewritten && !facts.title_request => {
            match state.titles.anchors().find(owner, &facts.exchanges) {
                Some(id) => (id, false),
                None => (fresh_id(), true),
            }
        }
        _ => {
            let first_user_text = facts.map_or("", |f| f.first_user_text.as_str());
            (
                conversation_id_with_key(headers, body_key, owner, first_user_text)?,
                false,
            )
        }
    })
}

/// Bodies from this size are rewritten on the blocking pool, one per core at a time: parsing and
/// rebuilding a large body takes long enough to stall every connection served by the same worker
/// thread, and each rewrite in progress holds about two more copies of its body.
const BLOCKING_PREPARE_BYTES: usize = 256 * 1024;

async fn prepare(
    state: &AppState,
    harness: &std::sync::Arc<dyn crate::harness::Harness>,
    body: &Bytes,
    headers: &HeaderMap,
) -> Result<Prepared, ProxyError> {
    let now = chrono::Utc::now();
    if body.len() < BLOCKING_PREPARE_BYTES {
        return Ok(harness.prepare(&HarnessRequest { body, headers, now })?);
    }
    let Ok(_turn) = state.large_rewrites.acquire().await else {
        return Err(ProxyError::Internal("rewrite limiter closed".to_owned()));
    };
    let (harness, body, headers) = (harness.clone(), body.clone(), headers.clone());
    let prepared = tokio::task::spawn_blocking(move || {
        harness.prepare(&HarnessRequest {
            body: &body,
            headers: &headers,
            now,
        })
    })
    .await
    .map_err(|e| ProxyError::Internal(format!("request rewrite failed: {e}")))?;
    Ok(prepared?)
}

/// Counts each tool named in `x-harness-dropped-tools` (the harness's and the protocol's drops).
fn count_dropped_tools(harness: &'static str, headers: &HeaderMap) {
    let Some(list) = headers
        .get("x-harness-dropped-tools")
        .and_then(|v| v.to_str().ok())
    else {
        return;
    };
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        metrics::counter!(
            "harness_proxy_dropped_tools_total",
            "harness" => harness,
            "tool" => crate::routes::meter::tool_label(name)
        )
        .increment(1);
    }
}

fn has_conversation_header(headers: &HeaderMap) -> bool {
    [
        "x-conversation-id",
        "x-session-id",
        "session_id",
        "session-id",
        "thread-id",
    ]
    .iter()
    .any(|h| headers.contains_key(*h))
}

/// Maps the upstream answer to the client's: errors and passthrough untouched, otherwise reshaped.
/// `max_event`: `limits.max_sse_event_bytes`, the most one upstream SSE event (or line) may hold.
async fn respond(
    upstream: UpstreamResponse,
    plan: ResponsePlan,
    render: Option<(Box<dyn Renderer>, bool)>,
    max_event: usize,
    protocol: ClientProtocol,
) -> Result<Response, ProxyError> {
    let finished = AnswerFinished::default();
    let mut response = match render {
        Some((renderer, client_stream)) => {
            crate::routes::render::render(
                upstream,
                plan,
                renderer,
                client_stream,
                &finished,
                max_event,
            )
            .await?
        }
        None => shape(upstream, plan, &finished, max_event, protocol).await?,
    };
    response.extensions_mut().insert(finished);
    Ok(response)
}

async fn shape(
    upstream: UpstreamResponse,
    plan: ResponsePlan,
    finished: &AnswerFinished,
    max_event: usize,
    protocol: ClientProtocol,
) -> Result<Response, ProxyError> {
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
                PassthroughBody::new(body, sse)
                    .max_line(max_event)
                    // Only a Chat Completions answer is known to end with a finish or `[DONE]`.
                    .watching(
                        finished,
                        status.is_success() && protocol == ClientProtocol::Chat,
                    )
                    .into_body(),
            ));
        }
    };
    let mut out_headers = client_headers(&headers, true);
    let Reshape {
        client_stream,
        include_usage,
        calls,
    } = reshape;
    if client_stream {
        out_headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        out_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let stream: Body = if sse {
            let shaper = Shaper::new(include_usage).with_max_event(max_event);
            let shaper = match calls {
                Some(mapper) => shaper.with_calls(mapper),
                None => shaper,
            };
            Body::from_stream(ShapedBody::new(body, shaper, finished.clone()))
        } else {
            // The upstream ignored `stream: true`; turn its one JSON answer into events.
            let json = translate_json(collect(body).await?, calls.as_deref());
            Body::from(crate::protocols::chat::synthetic::completion_to_sse(
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
        let body = match calls {
            None => PassthroughBody::new(body, false).into_body(),
            Some(mapper) => Body::from(translate_json(collect(body).await?, Some(mapper.as_ref()))),
        };
        return Ok(build(status, out_headers, body));
    }
    let mut folded = fold(body, max_event).await?;
    if let Some(mapper) = calls {
        translate_completion(&mut folded, mapper.as_ref());
    }
    let json = serde_json::to_vec(&folded).map_err(|e| ProxyError::Internal(e.to_string()))?;
    Ok(build(status, out_headers, Body::from(json)))
}

/// A JSON completion with its tool calls translated; bytes untouched when nothing maps.
pub(crate) fn translate_json(json: Bytes, calls: Option<&dyn CallMapper>) -> Bytes {
    let Some(mapper) = calls else { return json };
    match serde_json::from_slice::<serde_json::Value>(&json) {
        Ok(mut completion) => {
            translate_completion_json(&mut completion, mapper);
            serde_json::to_vec(&completion).map_or(json, Bytes::from)
        }
        Err(_) => json,
    }
}

pub(crate) fn build(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

pub(crate) async fn collect(mut body: BodyStream) -> Result<Bytes, ProxyError> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(Bytes::from(out))
}

async fn fold(
    mut body: BodyStream,
    max_event: usize,
) -> Result<crate::api::stream::Completion, ProxyError> {
    let mut folder = Folder::new().with_max_event(max_event);
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
        FoldError::TooLarge(too_large) => {
            ProxyError::Upstream(UpstreamError::EventTooLarge(too_large.limit))
        }
        FoldError::Unfinished => ProxyError::Upstream(UpstreamError::Interrupted(err.to_string())),
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
pub(crate) struct ShapedBody {
    inner: BodyStream,
    shaper: Shaper,
    queue: VecDeque<Bytes>,
    done: bool,
    finished: AnswerFinished,
}

impl ShapedBody {
    pub(crate) fn new(inner: BodyStream, shaper: Shaper, finished: AnswerFinished) -> Self {
        Self {
            inner,
            shaper,
            queue: VecDeque::new(),
            done: false,
            finished,
        }
    }
}

impl Stream for ShapedBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(bytes) = this.queue.pop_front() {
                this.finished.note(&bytes);
                return Poll::Ready(Some(Ok(bytes)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let mut out = Vec::new();
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if let Err(too_large) = this.shaper.push(&chunk, &mut out) {
                        // Ending here drops the upstream request with this body.
                        this.done = true;
                        let err = UpstreamError::EventTooLarge(too_large.limit);
                        metrics::counter!("harness_proxy_upstream_stream_errors_total")
                            .increment(1);
                        tracing::warn!(code = err.code(), error = %err, "upstream event too large");
                        out.push(Bytes::from(sse_error_event(&err.to_string(), err.code())));
                    }
                }
                Poll::Ready(Some(Err(err))) => {
                    this.done = true;
                    metrics::counter!("harness_proxy_upstream_stream_errors_total").increment(1);
                    tracing::warn!(code = err.code(), error = %err, "upstream failed mid-stream");
                    this.finished.interrupt();
                    out.push(Bytes::from(sse_error_event(&err.to_string(), err.code())));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    if !this.shaper.finish(&mut out) {
                        let err = UpstreamError::Interrupted(UNFINISHED.to_owned());
                        metrics::counter!("harness_proxy_upstream_stream_errors_total")
                            .increment(1);
                        tracing::warn!(code = err.code(), error = %err, "upstream stream ended early");
                        out.push(Bytes::from(sse_error_event(&err.to_string(), err.code())));
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
            this.queue.extend(out);
        }
    }
}
