//! How the end of an answer's body is known: `AnswerFinished` (whether the answer ended, or was
//! ended by the proxy's error event: what the access log reads), and `on_end` (work run once
//! the body has been sent, failed or was abandoned: a title that waits for the answer).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;

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
