//! Request id, one access-log line per request (written when the response body ends, so streamed
//! bytes are counted), and the in-flight gauges (requests, streams). No header value that may carry
//! a key is logged.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;

use super::activity::OpenRequest;
use crate::routes::error_response::ErrorCode;
use crate::routes::{AnswerFinished, RequestId, ResponseFacts, is_event_stream};
use crate::state::AppState;

struct AccessLog {
    request_id: String,
    method: String,
    path: String,
    status: u16,
    facts: ResponseFacts,
    error: Option<&'static str>,
    started: Instant,
}

impl AccessLog {
    fn emit(&self, bytes: u64, outcome: &'static str) {
        let duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            target: "harness_proxy::access",
            request_id = %self.request_id,
            method = %self.method,
            path = %self.path,
            harness = self.facts.harness.unwrap_or("-"),
            status = self.status,
            upstream_status = self.facts.upstream_status,
            error = self.error,
            duration_ms = format_args!("{duration_ms:.2}"),
            bytes,
            outcome,
            "request"
        );
        let harness = self.facts.harness.unwrap_or("-");
        let protocol = self.facts.protocol.unwrap_or("-");
        let mut series = SERIES.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, duration) = series
            .entry((harness, protocol, self.status))
            .or_insert_with(|| {
                let class = StatusCode::from_u16(self.status).map_or("other", super::status_label);
                (
                    metrics::counter!("harness_proxy_requests_total", "harness" => harness, "protocol" => protocol, "status" => class, "code" => self.status.to_string()),
                    metrics::histogram!("harness_proxy_request_duration_seconds", "harness" => harness, "protocol" => protocol),
                )
            });
        count.increment(1);
        duration.record(duration_ms / 1000.0);
    }
}

/// The request counter and duration histogram of each harness, protocol and status seen. The
/// `metrics` macros build their key and look it up in the recorder on every call, about 2.6k
/// instructions a request for these two; a kept handle is a pointer (BENCHMARKS.md, "The
/// access-log line written for less"). Bounded as the series are: harnesses and protocols are
/// the registry's names, a status is three digits. Only filled while serving, so after the
/// app's state installed the recorder (`telemetry::metrics_handle`): no handle kept here is the
/// no-op one of a process without a recorder yet. A test thread's local recorder is not
/// consulted for these two.
type Series = HashMap<(&'static str, &'static str, u16), (metrics::Counter, metrics::Histogram)>;
static SERIES: LazyLock<Mutex<Series>> = LazyLock::new(Mutex::default);

fn sane_request_id(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    (!text.is_empty() && text.len() <= 128 && text.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| text.to_owned())
}

/// A request the access log has seen: its id given, its line written however it ends (by
/// `answered`'s body, or on drop if no answer came).
pub(super) struct Logged {
    id: String,
    span: tracing::Span,
    unanswered: Unanswered,
}

/// Made once: a lookup by text parses the name on every request.
static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's id (the client's `x-request-id` if sane, else a new one) put in its
/// extensions, its span, and the line it will get.
pub(super) fn begin(state: &AppState, request: &mut Request) -> Logged {
    let started = Instant::now();
    let id = request
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(sane_request_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    request.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("request", request_id = %id);
    // Written if the request's future is dropped before the response exists: the client went
    // away while the upstream had not answered (hyper drops the handler), still one line and
    // one count.
    let open = request.extensions_mut().remove::<OpenRequest>();
    let unanswered = Unanswered {
        open,
        log: Some(AccessLog {
            request_id: id.clone(),
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            status: CLIENT_CLOSED_REQUEST,
            facts: ResponseFacts::default(),
            error: None,
            started,
        }),
        state: state.clone(),
    };
    Logged {
        id,
        span,
        unanswered,
    }
}

impl Logged {
    /// The span the request's handling runs in.
    pub(super) fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    /// The answer with the request id, its body logged: the line is written when it ends.
    pub(super) fn answered(mut self, response: Response) -> Response {
        let (mut parts, body) = response.into_parts();
        if let Ok(value) = HeaderValue::from_str(&self.id) {
            parts.headers.insert("x-request-id", value);
        }
        let mut log = self.unanswered.log.take();
        if let Some(log) = log.as_mut() {
            log.status = parts.status.as_u16();
            log.facts = parts
                .extensions
                .get::<ResponseFacts>()
                .copied()
                .unwrap_or_default();
            log.error = parts.extensions.get::<ErrorCode>().map(|c| c.0);
        }
        let permit = parts
            .extensions
            .remove::<PermitSlot>()
            .and_then(|slot| slot.0);
        let finished = parts.extensions.get::<AnswerFinished>().cloned();
        let length = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let stream = is_event_stream(&parts.headers).then(StreamGauge::new);
        let state = self.unanswered.state.clone();
        let open = self.unanswered.open.take();
        Response::from_parts(
            parts,
            Body::new(LoggedBody {
                inner: body,
                bytes: 0,
                length,
                log,
                finished,
                state,
                _stream: stream,
                _permit: permit,
                _open: open,
            }),
        )
    }
}

/// nginx's "client closed request": the status a request's line and count get when its client
/// went away before any response existed.
const CLIENT_CLOSED_REQUEST: u16 = 499;

/// The access-log line of a request whose handler is still running; written on drop, when the
/// handler was dropped with it (the client hung up before the response head).
struct Unanswered {
    log: Option<AccessLog>,
    state: AppState,
    /// The connection's count of open requests holds this one until its line is written.
    open: Option<OpenRequest>,
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            let outcome = if self.state.is_cutting() {
                "shutdown"
            } else {
                "client_disconnected"
            };
            log.emit(0, outcome);
        }
    }
}

/// Carries the request slot from admission to the logged body, which holds it until the last
/// byte is sent (a stream counts as in flight until it ends).
#[derive(Clone)]
pub(super) struct PermitSlot(pub Option<std::sync::Arc<InFlight>>);

/// One of `limits.max_concurrent_requests`, and the requests-in-flight gauge while it is held.
pub(super) struct InFlight {
    _permit: OwnedSemaphorePermit,
}

impl InFlight {
    pub fn new(permit: OwnedSemaphorePermit) -> Self {
        metrics::gauge!("harness_proxy_requests_in_flight").increment(1.0);
        Self { _permit: permit }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!("harness_proxy_requests_in_flight").decrement(1.0);
    }
}

/// The streams-in-flight gauge, raised while an event-stream response is being sent.
struct StreamGauge;

impl StreamGauge {
    fn new() -> Self {
        metrics::gauge!("harness_proxy_streams_in_flight").increment(1.0);
        Self
    }
}

impl Drop for StreamGauge {
    fn drop(&mut self) {
        metrics::gauge!("harness_proxy_streams_in_flight").decrement(1.0);
    }
}

struct LoggedBody {
    inner: Body,
    bytes: u64,
    /// The declared `Content-Length`: once that many bytes went out, the answer is complete even
    /// if the connection never polls the body's end.
    length: Option<u64>,
    log: Option<AccessLog>,
    /// For streamed answers: whether the answer itself was complete, or interrupted.
    finished: Option<AnswerFinished>,
    /// To tell a cut at the end of the shutdown grace from a client that went away.
    state: AppState,
    _stream: Option<StreamGauge>,
    _permit: Option<std::sync::Arc<InFlight>>,
    /// Dropped after the line is written: the connection counts the request open until then.
    _open: Option<OpenRequest>,
}

impl http_body::Body for LoggedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.bytes += data.len() as u64;
                }
            }
            Poll::Ready(Some(Err(_))) => self.finish("upstream_error"),
            Poll::Ready(None) => {
                // A stream that ended with the proxy's own error event was not a complete answer.
                let interrupted = self
                    .finished
                    .as_ref()
                    .is_some_and(AnswerFinished::is_interrupted);
                self.finish(if interrupted {
                    "upstream_error"
                } else {
                    "complete"
                });
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl LoggedBody {
    fn finish(&mut self, outcome: &'static str) {
        if let Some(log) = self.log.take() {
            log.emit(self.bytes, outcome);
        }
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        // Dropped before its end: the client went away (or shutdown cut the connection). A body
        // that was empty from the start may never be polled at all, and one with a length may
        // not be polled past its last byte.
        let outcome = if http_body::Body::is_end_stream(&self.inner)
            || self.length.is_some_and(|length| self.bytes >= length)
        {
            "complete"
        } else if self.state.is_cutting() {
            "shutdown"
        } else if self.finished.as_ref().is_some_and(AnswerFinished::is_set) {
            "client_closed_after_answer"
        } else {
            "client_disconnected"
        };
        self.finish(outcome);
    }
}
