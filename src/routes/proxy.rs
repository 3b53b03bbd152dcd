//! Plumbing shared by the proxied routes: bounded body reading, header filtering both ways, and the
//! byte-transparent response body with its mid-stream error event.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

use crate::api::error::sse_error_event;
use crate::error::ProxyError;
use crate::protocols::chat::EndWatch;
pub use crate::upstream::is_event_stream;
use crate::upstream::{BodyStream, Interruption, UpstreamError, is_hop_by_hop};

/// Reads the whole request body, refusing more than `limit` bytes.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ProxyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    axum::body::to_bytes(body, limit).await.map_err(|err| {
        let too_large = std::error::Error::source(&err)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ProxyError::BodyTooLarge { limit }
        } else {
            ProxyError::BodyRead(err.to_string())
        }
    })
}

/// Headers of the proxy's own dialect, never sent upstream.
fn is_control_header(name: &HeaderName, harness_header: &HeaderName) -> bool {
    name == harness_header
        || name.as_str().starts_with("x-harness-")
        || name.as_str() == "x-collaboration-mode"
}

/// The client's end-to-end headers to send upstream. `rewritten` bodies get fresh content headers.
pub fn upstream_headers(
    client: &HeaderMap,
    harness_header: &HeaderName,
    rewritten: bool,
    request_id: &str,
) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(client.len() + 2);
    for (name, value) in client {
        if is_hop_by_hop(name)
            || is_control_header(name, harness_header)
            || matches!(
                *name,
                header::HOST | header::CONTENT_LENGTH | header::AUTHORIZATION | header::EXPECT
            )
            || name.as_str() == "x-request-id"
        {
            continue;
        }
        // `x-api-key` (Anthropic's key header) reaches a Chat Completions upstream as Bearer only.
        if rewritten
            && (matches!(
                *name,
                header::ACCEPT_ENCODING | header::ACCEPT | header::CONTENT_TYPE
            ) || name.as_str() == API_KEY)
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if rewritten {
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        out.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        // The response is parsed, so it must not arrive compressed.
        out.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        out.insert("x-request-id", value);
    }
    out
}

/// Anthropic's key header (Claude Code's `ANTHROPIC_API_KEY`).
const API_KEY: &str = "x-api-key";

/// The client's credential for the upstream: its `Authorization`, else — for a request translated
/// into Chat Completions — its `x-api-key` as a Bearer token (the same secret in Chat's header).
pub fn client_authorization(client: &HeaderMap, translated: bool) -> Option<HeaderValue> {
    if let Some(value) = client.get(header::AUTHORIZATION) {
        return Some(value.clone());
    }
    let key = client
        .get(API_KEY)
        .filter(|_| translated)?
        .to_str()
        .ok()?
        .trim();
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The upstream's end-to-end response headers. `reshaped` drops length and type, which change.
pub fn client_headers(upstream: &HeaderMap, reshaped: bool) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        if is_hop_by_hop(name) || name.as_str() == "x-request-id" {
            continue;
        }
        if reshaped
            && matches!(
                *name,
                header::CONTENT_LENGTH | header::CONTENT_TYPE | header::CONTENT_ENCODING
            )
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Set once a streamed answer carried its `finish_reason` (or the `DONE` sentinel): a client that
/// hangs up after that has its whole answer — Codex does so before the sentinel — and is not
/// logged as a disconnect. Put in response extensions for the access log, which also reads
/// `interrupted`.
#[derive(Clone, Default)]
pub struct AnswerFinished(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Set when the stream ended with the proxy's error event instead of its own end.
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

impl AnswerFinished {
    /// The answer ended (its end event is on its way to the client).
    pub fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn interrupt(&self) {
        self.1.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_interrupted(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The upstream body, byte for byte. An SSE body is forwarded in whole lines: the bytes after the
/// last line break of a chunk wait for the rest of their line, so a client never gets half an SSE
/// line. If the upstream fails mid-stream, an SSE response gets one final error event (the
/// waiting partial line is dropped); any other body is cut off. A Chat Completions answer that
/// must end (`watching`, success) and stops without `finish_reason` or the `DONE` sentinel gets
/// an `upstream_interrupted` error event too. The end is watched on whole events
/// (`protocols::chat::EndWatch`, which only reads the bytes forwarded), so a model whose text
/// spells the end does not hide a cut.
pub struct PassthroughBody {
    inner: BodyStream,
    sse: bool,
    /// The part of an SSE line received so far, held back until its line break arrives.
    partial: BytesMut,
    /// The last two bytes forwarded, to know whether an event boundary was reached.
    tail: [u8; 2],
    done: bool,
    /// Who is told the answer ended, and the watch that tells (SSE answers being watched).
    finished: Option<(AnswerFinished, EndWatch)>,
    /// The stream is a successful Chat Completions answer, which ends with a finish marker.
    must_end: bool,
    /// The longest SSE line held back (`limits.max_sse_event_bytes`).
    max_line: usize,
    /// An error to end the stream with on the next poll.
    failed: Option<UpstreamError>,
}

impl PassthroughBody {
    pub fn new(inner: BodyStream, sse: bool) -> Self {
        Self {
            inner,
            sse,
            partial: BytesMut::new(),
            tail: *b"\n\n",
            done: false,
            finished: None,
            must_end: false,
            max_line: crate::sse::DEFAULT_MAX_EVENT_BYTES,
            failed: None,
        }
    }

    /// Caps the partial SSE line held back; a longer line ends the stream with an error event.
    pub fn max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Flags the end of a streamed answer as it passes (after `max_line`, whose bound the watch
    /// keeps); `must_end`: a stream that stops before its end is reported as interrupted.
    pub fn watching(mut self, finished: &AnswerFinished, must_end: bool) -> Self {
        self.finished = self
            .sse
            .then(|| (finished.clone(), EndWatch::new(self.max_line)));
        self.must_end = self.sse && must_end;
        self
    }

    pub fn into_body(self) -> Body {
        Body::from_stream(self)
    }

    /// Extra blank lines are harmless to SSE parsers, so anything but `\n\n` gets them.
    fn at_boundary(&self) -> bool {
        self.tail == *b"\n\n"
    }

    /// Bytes about to be forwarded: remember the end marker and the last two bytes.
    fn forward(&mut self, chunk: Bytes) -> Bytes {
        if let Some((finished, watch)) = &mut self.finished
            && !finished.is_set()
            && watch.observe(&chunk)
        {
            finished.set();
        }
        match chunk.len() {
            0 => {}
            1 => self.tail = [self.tail[1], chunk[0]],
            n => self.tail = [chunk[n - 2], chunk[n - 1]],
        }
        chunk
    }

    /// The final error event, after closing any half-sent event.
    fn error_event(&mut self, err: &UpstreamError) -> Bytes {
        self.done = true;
        self.partial.clear();
        if let Some((finished, _)) = &self.finished {
            finished.interrupt();
        }
        metrics::counter!("harness_proxy_upstream_stream_errors_total").increment(1);
        tracing::warn!(code = err.code(), error = %err, "upstream failed mid-stream");
        let mut event = String::new();
        if !self.at_boundary() {
            event.push_str("\n\n");
        }
        event.push_str(&sse_error_event(&err.to_string(), err.code()));
        Bytes::from(event)
    }
}

impl Stream for PassthroughBody {
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            if let Some(err) = self.failed.take() {
                let event = self.error_event(&err);
                return Poll::Ready(Some(Ok(event)));
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if !self.sse {
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                    // Only the new bytes are searched, so a long line costs linear time.
                    let Some(last_break) = memchr::memrchr2(b'\n', b'\r', &chunk) else {
                        if self.partial.len() + chunk.len() > self.max_line {
                            let limit = self.max_line;
                            let event = self.error_event(&UpstreamError::EventTooLarge(limit));
                            return Poll::Ready(Some(Ok(event)));
                        }
                        self.partial.extend_from_slice(&chunk);
                        continue;
                    };
                    let whole = if self.partial.is_empty() {
                        chunk.slice(..=last_break)
                    } else {
                        self.partial.extend_from_slice(&chunk[..=last_break]);
                        self.partial.split().freeze()
                    };
                    if chunk.len() - last_break - 1 > self.max_line {
                        // The whole lines go now, the error event on the next poll.
                        self.failed = Some(UpstreamError::EventTooLarge(self.max_line));
                    } else {
                        self.partial.extend_from_slice(&chunk[last_break + 1..]);
                    }
                    let whole = self.forward(whole);
                    return Poll::Ready(Some(Ok(whole)));
                }
                Poll::Ready(Some(Err(err))) => {
                    if !self.sse {
                        self.done = true;
                        metrics::counter!("harness_proxy_upstream_stream_errors_total")
                            .increment(1);
                        tracing::warn!(code = err.code(), error = %err, "upstream failed mid-stream");
                        return Poll::Ready(Some(Err(err)));
                    }
                    let event = self.error_event(&err);
                    return Poll::Ready(Some(Ok(event)));
                }
                Poll::Ready(None) => {
                    let this = &mut *self;
                    let ended = this.finished.as_mut().is_none_or(|(finished, watch)| {
                        // The bytes after the last line break are the stream's last event.
                        watch.observe(&this.partial);
                        let told = watch.finish();
                        if watch.ended() {
                            finished.set();
                        }
                        told || finished.is_set()
                    });
                    if self.must_end && !ended {
                        let event =
                            self.error_event(&UpstreamError::Interrupted(Interruption::Unfinished));
                        return Poll::Ready(Some(Ok(event)));
                    }
                    self.done = true;
                    if self.partial.is_empty() {
                        return Poll::Ready(None);
                    }
                    // The stream ended without a final line break: those bytes are its last.
                    let rest = self.partial.split().freeze();
                    let rest = self.forward(rest);
                    return Poll::Ready(Some(Ok(rest)));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Runs `on_end` once when `body` has been sent in full, failed, or was dropped (client gone).
pub fn on_end(body: Body, on_end: impl FnOnce() + Send + 'static) -> Body {
    Body::new(OnEnd {
        inner: body,
        on_end: Some(Box::new(on_end)),
    })
}

struct OnEnd {
    inner: Body,
    on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl OnEnd {
    fn fire(&mut self) {
        if let Some(f) = self.on_end.take() {
            f();
        }
    }
}

impl http_body::Body for OnEnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.fire();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for OnEnd {
    /// The body goes first: what it feeds as it is dropped (an answer tap's text for an exchange
    /// title) is there when `on_end` runs.
    fn drop(&mut self) {
        drop(std::mem::replace(&mut self.inner, Body::empty()));
        self.fire();
    }
}
