//! The answer for a Chat Completions client: the upstream's body passed through untouched, its
//! stream reshaped by the `Shaper` (tool calls translated into the client's dialect), folded into
//! one JSON completion, or — when the upstream ignored `stream: true` — its JSON as synthetic SSE.
//! Also the small response helpers `render` (other protocols' answers) shares. It never parses a
//! passthrough stream and never collects a stream that the client receives as one.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::api::error::sse_error_event;
use crate::error::ProxyError;
use crate::memory::answer_witness::AnswerWitness;
use crate::protocols::chat::calls::{translate_completion, translate_completion_json};
use crate::protocols::chat::shaper::ShapeError;
use crate::protocols::chat::{CallMapper, FoldError, Folder, Reshape, ResponsePlan, Shaper};
use crate::routes::answer_end::AnswerFinished;
use crate::routes::front::Front;
use crate::routes::headers::client_headers;
use crate::routes::passthrough_body::PassthroughBody;
use crate::upstream::{BodyStream, Interruption, UpstreamError, UpstreamResponse, is_event_stream};

/// What an answer may hold, from `limits`.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// `limits.max_sse_event_bytes`: the most one upstream SSE event (or line) may hold.
    pub max_event: usize,
    /// `limits.max_answer_bytes`: the most upstream bytes read into one JSON answer.
    pub max_answer: usize,
}

/// The upstream's answer to a turn, with what the turn made of it.
pub(crate) struct Answer {
    pub(crate) upstream: UpstreamResponse,
    pub(crate) plan: ResponsePlan,
    /// What the proxy remembers of the answer, fed by whichever reader reads it.
    pub(crate) witness: Option<AnswerWitness>,
}

/// The answer to a Chat Completions client: errors and passthrough untouched (a failed stream
/// ending in the front's shape), otherwise reshaped.
pub(crate) async fn answer(
    answer: Answer,
    finished: &AnswerFinished,
    bounds: Bounds,
    front: &Front,
) -> Result<Response, ProxyError> {
    let max_event = bounds.max_event;
    let Answer {
        upstream,
        plan,
        mut witness,
    } = answer;
    let UpstreamResponse {
        status,
        headers,
        mut body,
    } = upstream;
    let sse = is_event_stream(&headers);
    // Folded, the answer is parsed by the folder, which feeds the witness; any other way, its
    // bytes are read for it.
    let folds = sse
        && status.is_success()
        && matches!(&plan, ResponsePlan::Reshape(reshape) if !reshape.client_stream);
    if !folds && let Some(witness) = witness.take() {
        body = Box::pin(witness.tap(body, sse));
    }
    let reshape = match plan {
        ResponsePlan::Reshape(reshape) if status.is_success() => reshape,
        ResponsePlan::Passthrough | ResponsePlan::Reshape(_) => {
            return Ok(build(
                status,
                client_headers(&headers, false),
                PassthroughBody::new(body, sse)
                    .max_line(max_event)
                    // Only a Chat Completions answer is known to end with a finish or `DONE`.
                    .watching(
                        finished,
                        status.is_success() && front.protocol == crate::protocols::chat::PROTOCOL,
                    )
                    // A stream in the client's protocol ends in its shape, whatever the route.
                    .errors_as(front.stream_error)
                    .into_body(),
            ));
        }
    };
    let mut out_headers = client_headers(&headers, true);
    let Reshape {
        client_stream,
        include_usage,
        calls,
        ..
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
            let json = translate_json(collect(body, bounds).await?, calls.as_deref());
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
            Some(mapper) => Body::from(translate_json(
                collect(body, bounds).await?,
                Some(mapper.as_ref()),
            )),
        };
        return Ok(build(status, out_headers, body));
    }
    let mut folded = apart(fold(bounded(body, bounds), max_event, witness)).await??;
    if let Some(mapper) = calls {
        translate_completion(&mut folded, mapper.as_ref());
    }
    let json = crate::protocols::chat::fold::answer(folded).map_err(ProxyError::internal)?;
    Ok(build(
        status,
        out_headers,
        crate::routes::render::json_body(json),
    ))
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

/// The whole of a (JSON) upstream body, within `bounds.max_answer`.
pub(crate) async fn collect(body: BodyStream, bounds: Bounds) -> Result<Bytes, ProxyError> {
    let mut body = bounded(body, bounds);
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(Bytes::from(out))
}

/// `body`, ended by `UpstreamError::AnswerTooLarge` as soon as it passes `bounds.max_answer`
/// bytes: for an answer the proxy holds whole, so that no upstream can make it hold more.
pub(crate) fn bounded(body: BodyStream, bounds: Bounds) -> BodyStream {
    Box::pin(Bounded {
        inner: body,
        left: bounds.max_answer,
        limit: bounds.max_answer,
        over: false,
    })
}

struct Bounded {
    inner: BodyStream,
    /// Bytes still allowed.
    left: usize,
    limit: usize,
    /// The bound was passed: the error was given, the inner body dropped from reading.
    over: bool,
}

impl Stream for Bounded {
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.over {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) if chunk.len() > self.left => {
                self.over = true;
                Poll::Ready(Some(Err(UpstreamError::AnswerTooLarge(self.limit))))
            }
            Poll::Ready(Some(Ok(chunk))) => {
                self.left -= chunk.len();
                Poll::Ready(Some(Ok(chunk)))
            }
            other => other,
        }
    }
}

/// Runs `work`, which reads the upstream body to its end, on a task of its own. Each upstream
/// chunk wakes the task that reads it; read in the request's task, that would be the request's
/// whole future (hyper's dispatcher, every middleware, the request's tracing span) polled once
/// per event, which under load cost more than folding the event. The task is aborted if the
/// request is dropped, so the upstream body is not read for nobody; a panic in it goes on in the
/// request, as it would have without the task.
pub(crate) async fn apart<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, ProxyError> {
    use tracing::Instrument as _;
    let mut task = AbortOnDrop(tokio::spawn(work.in_current_span()));
    match (&mut task.0).await {
        Ok(done) => Ok(done),
        Err(err) => match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(err) => Err(ProxyError::internal(err)),
        },
    }
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn fold(
    mut body: BodyStream,
    max_event: usize,
    witness: Option<AnswerWitness>,
) -> Result<crate::api::stream::Completion, ProxyError> {
    let mut folder = Folder::new().with_max_event(max_event);
    if let Some(witness) = witness {
        folder = folder.watched(Box::new(witness));
    }
    while let Some(chunk) = body.next().await {
        let pushed = match chunk {
            Ok(chunk) => folder.push(&chunk).map_err(fold_error),
            Err(err) => Err(err.into()),
        };
        if let Err(err) = pushed {
            folder.failed();
            return Err(err);
        }
    }
    folder.finish("").map_err(fold_error)
}

fn fold_error(err: FoldError) -> ProxyError {
    match err {
        FoldError::BadChunk(message) => ProxyError::Upstream(UpstreamError::InvalidEvent(message)),
        FoldError::TooLarge(too_large) => {
            ProxyError::Upstream(UpstreamError::EventTooLarge(too_large.limit))
        }
        FoldError::Unfinished => {
            ProxyError::Upstream(UpstreamError::Interrupted(Interruption::Unfinished))
        }
        FoldError::Upstream(error) => {
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("the upstream reported an error");
            ProxyError::Upstream(UpstreamError::Interrupted(Interruption::ErrorEvent(
                message.to_owned(),
            )))
        }
    }
}

/// The event a reshaped stream the `Shaper` stopped ends with, the failure logged once here: the
/// upstream's (counted as a failed stream, its words told), or the proxy's own (an `internal
/// error`, its cause in the log only).
fn stopped_event(stopped: ShapeError) -> Bytes {
    let err = match stopped {
        ShapeError::TooLarge(too_large) => UpstreamError::EventTooLarge(too_large.limit),
        ShapeError::Invalid(what) => UpstreamError::InvalidEvent(what),
        ShapeError::Encode(cause) => {
            tracing::error!(error = %cause, "cannot write a reshaped chunk as JSON; the stream stopped");
            // Told as any internal failure is: its words and code, nothing of the cause.
            let err = ProxyError::internal(cause);
            return Bytes::from(sse_error_event(&err.public_message(), err.code()));
        }
    };
    metrics::counter!("harness_proxy_upstream_stream_errors_total").increment(1);
    tracing::warn!(code = err.code(), error = %err, "upstream stream stopped");
    Bytes::from(sse_error_event(&err.to_string(), err.code()))
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
                // The last of the events that brought the answer's end is on its way.
                if this.queue.is_empty() && this.shaper.answered() {
                    this.finished.set();
                }
                return Poll::Ready(Some(Ok(bytes)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let mut out = Vec::new();
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if let Err(stopped) = this.shaper.push(&chunk, &mut out) {
                        // Ending here drops the upstream request with this body.
                        this.done = true;
                        out.push(stopped_event(stopped));
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
                        let err = UpstreamError::Interrupted(Interruption::Unfinished);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_the_proxy_cannot_write_again_ends_the_stream_with_an_internal_error_only() {
        let map = std::collections::BTreeMap::from([((1, 2), 3)]);
        let cause = serde_json::to_vec(&map).expect_err("keys that are not strings");
        assert_eq!(
            stopped_event(ShapeError::Encode(cause)),
            Bytes::from(
                "data: {\"error\":{\"message\":\"internal error\",\"type\":\"server_error\",\"param\":null,\"code\":\"internal_error\"}}\n\n"
            )
        );
    }

    #[test]
    fn an_upstream_event_too_large_ends_the_stream_with_its_own_words() {
        let event = stopped_event(ShapeError::TooLarge(crate::sse::EventTooLarge { limit: 8 }));
        let text = String::from_utf8(event.to_vec()).expect("utf-8");
        assert!(
            text.contains("\"code\":\"upstream_event_too_large\""),
            "{text}"
        );
    }
}
