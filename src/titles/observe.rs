//! A client that sends its own title request (opencode does) gets it forwarded untouched; on the
//! way back the answer's text deltas feed the live title and its end records the title, so the
//! conversation is titled once, by the client's own request, with no extra upstream call.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

use super::live::LiveTitle;
use super::service::TitleService;
use crate::protocols::chat::chunk::AnswerChunkView;
use crate::protocols::chat::is_done;
use crate::sse::Decoder;

/// Non-streamed answers are read up to this size for their title.
const MAX_JSON: usize = 64 * 1024;

/// Wraps the response body; forwards every item unchanged while watching it.
pub struct Observed<S> {
    inner: S,
    watcher: Option<Watcher>,
}

struct Watcher {
    service: Arc<TitleService>,
    live: Arc<LiveTitle>,
    sse: bool,
    decoder: Decoder,
    text: String,
    json: Vec<u8>,
    error: Option<String>,
    /// A `finish_reason` went by: the title is whole, whenever the client stops reading.
    complete: bool,
}

impl<S> Observed<S> {
    /// `status_error` is set when the upstream refused the request: the title fails with it.
    pub fn new(
        inner: S,
        service: Arc<TitleService>,
        live: Arc<LiveTitle>,
        sse: bool,
        status_error: Option<String>,
    ) -> Self {
        let watcher = Watcher {
            service,
            live,
            sse,
            decoder: Decoder::new(),
            text: String::new(),
            json: Vec::new(),
            error: status_error,
            complete: false,
        };
        Self {
            inner,
            watcher: Some(watcher),
        }
    }

    fn end(&mut self, failure: Option<String>) {
        if let Some(watcher) = self.watcher.take() {
            watcher.finish(failure);
        }
    }
}

impl Watcher {
    fn bytes(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if !self.sse {
            if self.json.len() < MAX_JSON {
                self.json.extend_from_slice(chunk);
            }
            return;
        }
        self.decoder.push(chunk);
        loop {
            match self.decoder.next_event() {
                Ok(Some(event)) => self.event(event.data.as_deref()),
                Ok(None) => break,
                Err(err) => {
                    self.error = Some(err.to_string());
                    break;
                }
            }
        }
    }

    fn event(&mut self, data: Option<&[u8]>) {
        let Some(data) = data.map(<[u8]>::trim_ascii) else {
            return;
        };
        if data.is_empty() || is_done(data) {
            return;
        }
        let Ok(chunk) = crate::protocols::chat::chunk::parse_event::<AnswerChunkView<'_>>(data)
        else {
            return;
        };
        if let Some(error) = chunk.reported_error() {
            self.error = Some(error.message.unwrap_or(error.raw));
            return;
        }
        let Some(choice) = chunk.answer else {
            return;
        };
        // The client gets its whole answer; the title reads its start (`answer::MAX_TITLE_TEXT`).
        if let Some(text) = choice.delta.text() {
            let room = super::answer::MAX_TITLE_TEXT.saturating_sub(self.text.len());
            let text = super::answer::cut(&text, room);
            self.live.push_delta(text);
            self.text.push_str(text);
        }
        if choice.finish_reason.is_some() {
            self.complete = true;
        }
    }

    fn finish(mut self, failure: Option<String>) {
        if let Some(event) = self.sse.then(|| self.decoder.finish()).flatten() {
            self.event(event.data.as_deref());
        }
        let raw = match (self.error, failure) {
            (Some(reason), _) | (None, Some(reason)) => Err(reason),
            (None, None) if self.sse => Ok(self.text),
            (None, None) => serde_json::from_slice::<serde_json::Value>(&self.json)
                .ok()
                .and_then(|v| {
                    v.pointer("/choices/0/message/content")
                        .and_then(|c| c.as_str())
                        .map(str::to_owned)
                })
                .ok_or_else(|| "unreadable title answer".to_owned()),
        };
        self.service.record_observed(self.live, raw);
    }
}

impl<S, E> Stream for Observed<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(watcher) = self.watcher.as_mut() {
                    watcher.bytes(chunk);
                }
            }
            Poll::Ready(Some(Err(err))) => {
                let reason = format!("title stream failed: {err}");
                self.end(Some(reason));
            }
            Poll::Ready(None) => self.end(None),
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for Observed<S> {
    /// A client that hangs up once it has the whole answer (Codex closes on
    /// `response.completed`, before the upstream's `DONE` sentinel is read) still has its title.
    fn drop(&mut self) {
        let whole = self.watcher.as_ref().is_some_and(|w| w.complete);
        let failure = (!whole).then(|| "the client stopped reading its title stream".to_owned());
        self.end(failure);
    }
}
