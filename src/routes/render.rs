//! The answer for a client that spoke another protocol than Chat Completions: the upstream's chat
//! stream is shaped as for a streaming chat client (usage kept, tool calls translated into the
//! client's dialect), read into answer events, and handed to the protocol's renderer — as a
//! stream, or folded into its one JSON answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::conversation::answer::watch;
use crate::error::ProxyError;
use crate::memory::answer_witness::AnswerWitness;
use crate::protocols::JsonAnswer;
use crate::protocols::chat::synthetic::completion_to_sse;
use crate::protocols::chat::{ResponsePlan, Shaper};
use crate::protocols::{AnswerEvent, ChatAnswerReader, NoJson, Renderer};
use crate::routes::answer::{
    Answer, Bounds, ShapedBody, apart, bounded, build, collect, translate_json,
};
use crate::routes::answer_end::AnswerFinished;
use crate::routes::front::UpstreamErrorShape;
use crate::routes::headers::client_headers;
use crate::routes::passthrough_body::PassthroughBody;
use crate::upstream::{BodyStream, UpstreamError, UpstreamResponse, is_event_stream};

type ChatStream = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

/// How long the upstream may stay silent before the client gets its protocol's keep-alive
/// (Anthropic's `ping`); proxies and clients drop connections idle for much longer.
pub const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) async fn render(
    answer: Answer,
    mut renderer: Box<dyn Renderer>,
    client_stream: bool,
    finished: &AnswerFinished,
    (bounds, upstream_error): (Bounds, Option<UpstreamErrorShape>),
) -> Result<Response, ProxyError> {
    let Answer {
        upstream,
        plan,
        witness,
    } = answer;
    let UpstreamResponse {
        status,
        headers,
        body,
    } = upstream;
    if !status.is_success() {
        return upstream_failed(status, &headers, body, upstream_error).await;
    }
    let calls = match plan {
        ResponsePlan::Reshape(reshape) => reshape.calls,
        ResponsePlan::Passthrough => None,
    };
    // A client that does not stream gets the answer held whole: bounded.
    let body = if client_stream {
        body
    } else {
        bounded(body, bounds)
    };
    let chat: ChatStream = if is_event_stream(&headers) {
        let shaper = Shaper::new(true).with_max_event(bounds.max_event);
        let shaper = match calls {
            Some(mapper) => shaper.with_calls(mapper),
            None => shaper,
        };
        Box::pin(
            ShapedBody::new(body, shaper, finished.clone()).map(|chunk| match chunk {
                Ok(bytes) => bytes,
                Err(never) => match never {},
            }),
        )
    } else {
        // The upstream ignored `stream: true`: its one JSON answer, as events.
        let json = translate_json(collect(body, bounds).await?, calls.as_deref());
        finished.set();
        Box::pin(futures_util::stream::once(std::future::ready(
            completion_to_sse(&json, true),
        )))
    };
    let mut out_headers = client_headers(&headers, true);
    if client_stream {
        out_headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        out_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let body = Body::from_stream(RenderedBody::new(chat, renderer).watched(witness));
        return Ok(build(status, out_headers, body));
    }
    // Read apart from the request's task: see `apart`.
    let json = apart(async move {
        let mut reader = ChatAnswerReader::new();
        let mut events = Vec::new();
        let mut discard = Vec::new();
        let mut witness = witness;
        renderer.holding_whole();
        renderer.start(&mut discard);
        let mut chat = chat;
        while let Some(bytes) = chat.next().await {
            reader.push(&bytes, &mut events);
            for event in events.drain(..) {
                witnessed(witness.as_mut(), &event);
                renderer.event(event, &mut discard);
            }
            discard.clear();
        }
        reader.finish(&mut events);
        for event in events.drain(..) {
            witnessed(witness.as_mut(), &event);
            renderer.event(event, &mut discard);
        }
        renderer.into_json()
    })
    .await?
    .map_err(|no_json| match no_json {
        NoJson::Failed(failed) => {
            ProxyError::Upstream(UpstreamError::reported(&failed.code, failed.message))
        }
        NoJson::Encode(cause) => ProxyError::internal(cause),
    })?;
    out_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(build(status, out_headers, json_body(json)))
}

/// A whole JSON answer as a body: one buffer (with its length) when small; its chunks, each
/// written as the client reads, when it carries long texts (`protocols::json_body`).
pub(crate) fn json_body(answer: JsonAnswer) -> Body {
    match answer.into_whole() {
        Ok(bytes) => Body::from(bytes),
        Err(chunks) => Body::from_stream(futures_util::stream::iter(
            chunks.map(Ok::<_, std::convert::Infallible>),
        )),
    }
}

/// The upstream's own error answer (OpenAI-shaped) with its status: as it came, or in the client
/// protocol's shape (`Front::upstream_error`; the body read up to `MAX_ERROR_BODY`).
pub(crate) async fn upstream_failed(
    status: StatusCode,
    headers: &HeaderMap,
    body: BodyStream,
    shape: Option<UpstreamErrorShape>,
) -> Result<Response, ProxyError> {
    let Some(shape) = shape else {
        return Ok(build(
            status,
            client_headers(headers, false),
            PassthroughBody::new(body, false).into_body(),
        ));
    };
    // A compressed body cannot be read here: only its status is reshaped.
    let readable = !headers.contains_key(header::CONTENT_ENCODING);
    let bounds = Bounds {
        max_event: MAX_ERROR_BODY,
        max_answer: MAX_ERROR_BODY,
    };
    let bytes = if readable {
        collect(body, bounds).await.unwrap_or_default()
    } else {
        Bytes::new()
    };
    let mut out_headers = client_headers(headers, true);
    out_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(build(
        status,
        out_headers,
        Body::from(shape(status, &bytes)),
    ))
}

/// The longest upstream error body read to be reshaped (an error page is cut there).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Chat SSE in, the client protocol's events out, frame by frame; the protocol's keep-alive
/// whenever the upstream was silent for `KEEPALIVE_EVERY`.
/// Tells the answer's witness (if any) what one event holds: the reader parsed it already.
fn witnessed(witness: Option<&mut AnswerWitness>, event: &AnswerEvent) {
    if let Some(witness) = witness {
        watch(witness, event);
    }
}

pub(crate) struct RenderedBody {
    chat: ChatStream,
    reader: ChatAnswerReader,
    renderer: Box<dyn Renderer>,
    /// What the proxy remembers of the answer, told each event as it is rendered.
    witness: Option<AnswerWitness>,
    events: Vec<AnswerEvent>,
    queue: std::collections::VecDeque<Bytes>,
    started: bool,
    done: bool,
    /// Armed only for protocols that have a keep-alive.
    keepalive: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl RenderedBody {
    pub(crate) fn new(chat: ChatStream, renderer: Box<dyn Renderer>) -> Self {
        let keepalive = renderer
            .keepalive()
            .map(|_| Box::pin(tokio::time::sleep(KEEPALIVE_EVERY)));
        Self {
            keepalive,
            chat,
            reader: ChatAnswerReader::new(),
            renderer,
            witness: None,
            events: Vec::new(),
            queue: std::collections::VecDeque::new(),
            started: false,
            done: false,
        }
    }

    pub(crate) fn watched(mut self, witness: Option<AnswerWitness>) -> Self {
        self.witness = witness;
        self
    }

    fn render_events(&mut self) {
        let mut out = Vec::new();
        for event in self.events.drain(..) {
            witnessed(self.witness.as_mut(), &event);
            self.renderer.event(event, &mut out);
        }
        self.queue.extend(out);
    }
}

impl Stream for RenderedBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if !this.started {
            this.started = true;
            let mut out = Vec::new();
            this.renderer.start(&mut out);
            this.queue.extend(out);
        }
        loop {
            if let Some(bytes) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(bytes)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.chat.as_mut().poll_next(cx) {
                Poll::Ready(Some(bytes)) => {
                    this.reader.push(&bytes, &mut this.events);
                    if let Some(timer) = this.keepalive.as_mut() {
                        timer
                            .as_mut()
                            .reset(tokio::time::Instant::now() + KEEPALIVE_EVERY);
                    }
                }
                Poll::Ready(None) => {
                    this.done = true;
                    this.reader.finish(&mut this.events);
                }
                Poll::Pending => {
                    let Some(timer) = this.keepalive.as_mut() else {
                        return Poll::Pending;
                    };
                    if timer.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    timer
                        .as_mut()
                        .reset(tokio::time::Instant::now() + KEEPALIVE_EVERY);
                    this.queue.extend(this.renderer.keepalive());
                }
            }
            this.render_events();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::messages::render::MessagesRenderer;

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_gets_a_ping_every_ten_seconds_and_data_resets_it() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let chat = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|bytes| (bytes, rx))
        });
        let renderer = Box::new(MessagesRenderer::new("msg_1".into(), "m".into()));
        let mut body = RenderedBody::new(Box::pin(chat), renderer);
        let t0 = tokio::time::Instant::now();
        let first = body.next().await.expect("start").expect("bytes");
        assert!(first.starts_with(b"event: message_start\n"));
        let ping = body.next().await.expect("ping").expect("bytes");
        assert_eq!(&ping[..], b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
        assert_eq!(t0.elapsed(), KEEPALIVE_EVERY);
        tokio::time::advance(std::time::Duration::from_secs(7)).await;
        tx.send(Bytes::from_static(
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        ))
        .expect("send");
        let start = body.next().await.expect("block").expect("bytes");
        assert!(start.starts_with(b"event: content_block_start\n"));
        let delta = body.next().await.expect("delta").expect("bytes");
        assert!(delta.starts_with(b"event: content_block_delta\n"));
        let at_data = tokio::time::Instant::now();
        let ping = body.next().await.expect("ping").expect("bytes");
        assert!(ping.starts_with(b"event: ping\n"));
        assert_eq!(
            at_data.elapsed(),
            KEEPALIVE_EVERY,
            "the timer restarts on data"
        );
        drop(tx);
        let rest: Vec<Bytes> = body.map(|b| b.expect("bytes")).collect().await;
        let last = rest.last().expect("an event");
        assert!(last.starts_with(b"event: error\n"), "cut before finish");
    }
}
