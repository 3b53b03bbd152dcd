//! The upstream's body forwarded as it comes (passthrough, error answers, other `/v1/*`
//! routes): never parsed, never re-encoded, an SSE body in whole lines, a failure mid-stream
//! ended with one error event in the client protocol's shape.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures_util::Stream;

use crate::protocols::chat::EndWatch;
use crate::routes::answer_end::AnswerFinished;
use crate::routes::front::{StreamErrorShape, openai_stream_error};
use crate::upstream::{BodyStream, Interruption, UpstreamError};

/// The upstream body, byte for byte. An SSE body is forwarded in whole lines: the bytes after the
/// last line break of a chunk wait for the rest of their line, so a client never gets half an SSE
/// line. If the upstream fails mid-stream, an SSE response gets one final error event in the
/// client protocol's shape (`errors_as`; the waiting partial line is dropped); any other body is
/// cut off. A Chat Completions answer that
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
    /// The event an SSE stream ends with when the upstream fails, in the client's protocol.
    error_shape: StreamErrorShape,
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
            error_shape: openai_stream_error,
        }
    }

    /// Ends a failed SSE stream with `shape`'s event (the client protocol's) instead of
    /// OpenAI's.
    pub fn errors_as(mut self, shape: StreamErrorShape) -> Self {
        self.error_shape = shape;
        self
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
        event.push_str(&(self.error_shape)(err.code(), &err.to_string()));
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
                        // The upstream's own error event was the client's one error: nothing
                        // follows it, and the answer was not complete.
                        if watch.failed() {
                            finished.interrupt();
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
