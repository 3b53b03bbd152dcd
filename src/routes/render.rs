//! The answer for a client that spoke another protocol than Chat Completions: the upstream's chat
//! stream is shaped as for a streaming chat client (usage kept, tool calls translated into the
//! client's dialect), read into answer events, and handed to the protocol's renderer — as a
//! stream, or folded into its one JSON answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use crate::error::ProxyError;
use crate::protocols::{AnswerEvent, ChatAnswerReader, Renderer};
use crate::response::synthetic::completion_to_sse;
use crate::response::{ResponsePlan, Shaper};
use crate::routes::chat::{ShapedBody, build, collect, translate_json};
use crate::routes::proxy::{AnswerFinished, PassthroughBody, client_headers, is_event_stream};
use crate::upstream::{UpstreamError, UpstreamResponse};

type ChatStream = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

pub async fn render(
    upstream: UpstreamResponse,
    plan: ResponsePlan,
    mut renderer: Box<dyn Renderer>,
    client_stream: bool,
    finished: &AnswerFinished,
) -> Result<Response, ProxyError> {
    let UpstreamResponse {
        status,
        headers,
        body,
    } = upstream;
    if !status.is_success() {
        // The upstream's own error answer (OpenAI-shaped) with its status; a protocol with another
        // error shape reshapes it in its route layer.
        return Ok(build(
            status,
            client_headers(&headers, false),
            PassthroughBody::new(body, false).into_body(),
        ));
    }
    let calls = match plan {
        ResponsePlan::Reshape(reshape) => reshape.calls,
        ResponsePlan::Passthrough => None,
    };
    let chat: ChatStream = if is_event_stream(&headers) {
        let shaper = Shaper::new(true);
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
        let json = translate_json(collect(body).await?, calls.as_deref());
        finished.note(b"[DONE]");
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
        let body = Body::from_stream(RenderedBody::new(chat, renderer));
        return Ok(build(status, out_headers, body));
    }
    let mut reader = ChatAnswerReader::new();
    let mut events = Vec::new();
    let mut discard = Vec::new();
    renderer.start(&mut discard);
    let mut chat = chat;
    while let Some(bytes) = chat.next().await {
        reader.push(&bytes, &mut events);
        for event in events.drain(..) {
            renderer.event(event, &mut discard);
        }
        discard.clear();
    }
    reader.finish(&mut events);
    for event in events.drain(..) {
        renderer.event(event, &mut discard);
    }
    let json = renderer
        .into_json()
        .map_err(|failed| ProxyError::Upstream(UpstreamError::Interrupted(failed.message)))?;
    out_headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(build(status, out_headers, Body::from(json)))
}

/// Chat SSE in, the client protocol's events out, frame by frame.
struct RenderedBody {
    chat: ChatStream,
    reader: ChatAnswerReader,
    renderer: Box<dyn Renderer>,
    events: Vec<AnswerEvent>,
    queue: std::collections::VecDeque<Bytes>,
    started: bool,
    done: bool,
}

impl RenderedBody {
    fn new(chat: ChatStream, renderer: Box<dyn Renderer>) -> Self {
        Self {
            chat,
            reader: ChatAnswerReader::new(),
            renderer,
            events: Vec::new(),
            queue: std::collections::VecDeque::new(),
            started: false,
            done: false,
        }
    }

    fn render_events(&mut self) {
        let mut out = Vec::new();
        for event in self.events.drain(..) {
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
                Poll::Ready(Some(bytes)) => this.reader.push(&bytes, &mut this.events),
                Poll::Ready(None) => {
                    this.done = true;
                    this.reader.finish(&mut this.events);
                }
                Poll::Pending => return Poll::Pending,
            }
            this.render_events();
        }
    }
}
