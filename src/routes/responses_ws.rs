//! `GET /v1/responses` and `GET /harness/{name}/v1/responses` with a WebSocket upgrade: the
//! Responses front over a WebSocket (OpenAI's WebSocket mode; Codex asks for it with `OpenAI-Beta:
//! responses_websockets=…`), as a thin adapter. Each `response.create` message is read and made
//! whole by `protocols::responses::socket`, then sent as the body of a `POST` to the same path,
//! with the upgrade's headers, through `Frames`: the layers an HTTP request passes (browser guard,
//! key gate, admission, access log) and its pipeline (`pipeline::serve`). The answer's SSE events go
//! back one text message each (`sse::Decoder`), an error answer as one `error` event.
//!
//! Owns the socket's loop: one response at a time (a `response.create` meanwhile gets an error
//! event), the client's hang-up dropping the running answer and with it the upstream request, the
//! idle bound (`limits.keep_alive_timeout` with no response running and no message), the
//! shutdown's drain (the running response finishes) and cut, and the connection's chain
//! (`socket::Chain`), its bytes counted in `limits.max_inflight_body_bytes` while kept, dropped at
//! close. Off (`responses.websocket = false`) or without an upgrade,
//! the route answers 426 and Codex falls back to HTTP. Must not parse or render Responses itself,
//! nor skip a layer an HTTP request passes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Extension, State};
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::error::ProxyError;
use crate::protocols::responses::{Stamp, socket};
use crate::routes::ConnectionScope;
use crate::routes::front::Call;
use crate::sse::Decoder;
use crate::state::AppState;
use crate::upstream::{Interruption, UpstreamError};

/// The Responses front's `POST` routes behind every layer an HTTP request passes, built by the
/// server: where each message goes.
#[derive(Clone)]
pub struct Frames(pub Router);

/// Most items a connection's chain keeps (besides `limits.max_body_bytes` of them).
const MAX_CHAIN_ITEMS: usize = 65_536;

/// The largest error answer shown whole in an `error` event.
const MAX_ERROR_BODY: usize = 64 * 1024;

const TURNED_OFF: &str = "Responses over WebSocket is turned off on this proxy (responses.websocket = false); use HTTP POST /v1/responses";
const NOT_AN_UPGRADE: &str = "GET /v1/responses serves Responses over WebSocket (HTTP/1.1 upgrade); send a WebSocket upgrade, or POST /v1/responses";

pub async fn upgrade(
    State(state): State<AppState>,
    Extension(frames): Extension<Frames>,
    scope: Option<Extension<ConnectionScope>>,
    call: Call,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if !state.config.responses.websocket {
        return ProxyError::UpgradeRequired(TURNED_OFF).into_response();
    }
    let Ok(upgrade) = upgrade else {
        return ProxyError::UpgradeRequired(NOT_AN_UPGRADE).into_response();
    };
    let limits = &state.config.limits;
    let session = Session {
        frames: frames.0,
        call,
        scope: scope.map(|Extension(scope)| scope),
        idle: limits.keep_alive_timeout,
        max_event: limits.max_answer_bytes,
        chain: socket::Chain::new(limits.max_body_bytes, MAX_CHAIN_ITEMS),
        budget: state.body_budget.clone(),
        kept: None,
        sent: 0,
    };
    upgrade
        .max_message_size(limits.max_body_bytes)
        .max_frame_size(limits.max_body_bytes)
        .on_upgrade(move |ws| session.run(ws))
}

type Outbox = SplitSink<WebSocket, Message>;
type Inbox = SplitStream<WebSocket>;

/// One connection's socket.
struct Session {
    frames: Router,
    /// The upgrade request: each message's `POST` takes its path, query and headers.
    call: Call,
    scope: Option<ConnectionScope>,
    idle: Duration,
    /// The largest answer event forwarded (`limits.max_answer_bytes`).
    max_event: usize,
    chain: socket::Chain,
    /// `limits.max_inflight_body_bytes`: the chain's bytes are a client's input held in memory.
    budget: Arc<Semaphore>,
    /// The chain's bytes, reserved in `budget` while it keeps them.
    kept: Option<OwnedSemaphorePermit>,
    /// Messages sent through the pipeline so far: each one's request id is the upgrade's, `.n`.
    sent: u64,
}

/// Why a socket ended.
#[derive(Debug, Clone, Copy)]
enum End {
    /// The client closed, or went away.
    Gone,
    Idle,
    Shutdown,
    Cut,
    /// A message over `limits.max_body_bytes`.
    TooLarge,
}

/// Whether the socket goes on after a message.
enum Flow {
    Open,
    Closed(End),
}

impl Session {
    async fn run(mut self, ws: WebSocket) {
        // The connection's slot and drain place, held until the socket ends.
        let scope = self.scope.take();
        let (stopping, cut) = scope.as_ref().map_or_else(
            || (CancellationToken::new(), CancellationToken::new()),
            |s| (s.stopping.clone(), s.cut.clone()),
        );
        let (mut tx, mut rx) = ws.split();
        let end = loop {
            let next = tokio::select! {
                biased;
                () = cut.cancelled() => break End::Cut,
                () = stopping.cancelled() => break End::Shutdown,
                next = tokio::time::timeout(self.idle, rx.next()) => next,
            };
            let message = match next {
                Err(_) => break End::Idle,
                Ok(None | Some(Ok(Message::Close(_)))) => break End::Gone,
                Ok(Some(Err(err))) => break broken(&err, &mut tx).await,
                Ok(Some(Ok(message))) => message,
            };
            let flow = match message {
                Message::Text(text) => self.answer(&text, (&mut tx, &mut rx), &cut).await,
                Message::Binary(_) => refuse(not_text(), &mut tx).await,
                Message::Ping(_) | Message::Pong(_) | Message::Close(_) => Flow::Open,
            };
            if let Flow::Closed(end) = flow {
                break end;
            }
        };
        let goodbye = match end {
            End::Gone | End::Cut => None,
            End::Idle => Some((close_code::NORMAL, "idle")),
            End::Shutdown => Some((close_code::AWAY, "the proxy is shutting down")),
            End::TooLarge => Some((close_code::SIZE, "message over limits.max_body_bytes")),
        };
        if let Some((code, reason)) = goodbye {
            let frame = CloseFrame {
                code,
                reason: Utf8Bytes::from_static(reason),
            };
            let _ = tx.send(Message::Close(Some(frame))).await;
        }
        tracing::info!(request_id = %self.call.id.0, responses = self.sent, end = ?end, "websocket closed");
        drop(scope);
    }

    /// One text message: a `response.create` answered (or refused), anything else refused.
    async fn answer(
        &mut self,
        text: &str,
        (tx, rx): (&mut Outbox, &mut Inbox),
        cut: &CancellationToken,
    ) -> Flow {
        let turn = match socket::read(text) {
            Ok(socket::Frame::Processed) => return Flow::Open,
            Ok(socket::Frame::Create(create)) => self.chain.expand(create),
            Err(err) => Err(err),
        };
        let mut turn = match turn {
            Ok(turn) => turn,
            Err(err) => return refuse(err, tx).await,
        };
        tracing::debug!(
            request_id = %self.call.id.0,
            generate = turn.generate,
            continued = turn.continued,
            body_bytes = turn.body.len(),
            "websocket response.create"
        );
        let response = if turn.generate {
            self.sent += 1;
            let body = std::mem::take(&mut turn.body);
            let call = self.frames.clone().oneshot(self.request(body));
            tokio::pin!(call);
            loop {
                tokio::select! {
                    response = &mut call => break response.unwrap_or_else(|never| match never {}),
                    next = rx.next() => if let Flow::Closed(end) = meanwhile(next, tx).await {
                        return Flow::Closed(end);
                    },
                    () = cut.cancelled() => return Flow::Closed(End::Cut),
                }
            }
        } else {
            // A warm-up: an empty response, nothing sent upstream.
            let events = socket::prewarmed(&turn, Stamp::now());
            Response::new(Body::from(events.concat()))
        };
        self.forward(response, turn, (tx, rx), cut).await
    }

    /// A message's `POST`: the upgrade's path, query and end-to-end headers, the body made whole.
    fn request(&self, body: Bytes) -> Request<Body> {
        let uri = match &self.call.query {
            Some(query) => format!("{}?{query}", self.call.path),
            None => self.call.path.clone(),
        };
        let length = HeaderValue::from(body.len());
        let mut request = Request::new(Body::from(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri.parse().unwrap_or_default();
        let headers = request.headers_mut();
        for (name, value) in &self.call.headers {
            let name_text = name.as_str();
            let websocket_only = name_text.starts_with("sec-websocket-")
                || (name == "openai-beta" && value.as_bytes().starts_with(b"responses_websockets"));
            if websocket_only
                || matches!(
                    *name,
                    header::CONNECTION
                        | header::UPGRADE
                        | header::CONTENT_LENGTH
                        | header::TRANSFER_ENCODING
                        | header::CONTENT_TYPE
                        | header::ACCEPT
                )
                || name_text == "x-request-id"
            {
                continue;
            }
            headers.append(name.clone(), value.clone());
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CONTENT_LENGTH, length);
        if let Ok(id) = HeaderValue::from_str(&format!("{}.{}", self.call.id.0, self.sent)) {
            headers.insert("x-request-id", id);
        }
        request
    }

    /// The answer, one message per event; its end (`response.completed`) kept in the chain.
    async fn forward(
        &mut self,
        response: Response,
        turn: socket::Turn,
        (tx, rx): (&mut Outbox, &mut Inbox),
        cut: &CancellationToken,
    ) -> Flow {
        let status = response.status();
        if !status.is_success() {
            let message = error_message(status, response.into_body()).await;
            return sent(tx.send(message).await);
        }
        let mut body = response.into_body();
        let mut decoder = Decoder::with_limit(self.max_event);
        let mut turn = Some(turn);
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                next = rx.next() => match meanwhile(next, tx).await {
                    Flow::Open => continue,
                    closed @ Flow::Closed(_) => return closed,
                },
                () = cut.cancelled() => return Flow::Closed(End::Cut),
            };
            let data = match frame {
                None => break,
                Some(Err(_)) => {
                    let err = UpstreamError::Interrupted(Interruption::Unfinished);
                    return refuse(err.into(), tx).await;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            decoder.push(&data);
            loop {
                let event = match decoder.next_event() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(too_large) => {
                        let err = UpstreamError::EventTooLarge(too_large.limit);
                        return refuse(err.into(), tx).await;
                    }
                };
                if let Flow::Closed(end) = self.event(event.data, &mut turn, tx).await {
                    return Flow::Closed(end);
                }
            }
        }
        let last = decoder.finish().and_then(|event| event.data);
        self.event(last, &mut turn, tx).await
    }

    /// One answer event as one text message.
    async fn event(
        &mut self,
        data: Option<Bytes>,
        turn: &mut Option<socket::Turn>,
        tx: &mut Outbox,
    ) -> Flow {
        let Some(data) = data.filter(|d| !d.is_empty()) else {
            return Flow::Open;
        };
        if let Some(finished) = socket::finished(&data)
            && let Some(turn) = turn.take()
        {
            self.kept = None;
            let bytes = self.chain.keep(turn, finished);
            self.kept = bytes
                .and_then(|bytes| u32::try_from(bytes).ok())
                .and_then(|bytes| self.budget.clone().try_acquire_many_owned(bytes).ok());
            if self.kept.is_none() {
                // Not held: a message naming it gets `previous_response_not_found`.
                self.chain.forget();
            }
        }
        match Utf8Bytes::try_from(data) {
            Ok(text) => sent(tx.send(Message::Text(text)).await),
            // Never from this proxy's renderers; a passthrough upstream's broken event is dropped.
            Err(_) => Flow::Open,
        }
    }
}

/// A client message while a response runs: its hang-up ends the response, another
/// `response.create` is refused.
async fn meanwhile(next: Option<Result<Message, axum::Error>>, tx: &mut Outbox) -> Flow {
    match next {
        None | Some(Err(_) | Ok(Message::Close(_))) => Flow::Closed(End::Gone),
        Some(Ok(Message::Text(text)))
            if matches!(socket::read(&text), Ok(socket::Frame::Processed)) =>
        {
            Flow::Open
        }
        Some(Ok(Message::Text(_) | Message::Binary(_))) => refuse(busy(), tx).await,
        Some(Ok(Message::Ping(_) | Message::Pong(_))) => Flow::Open,
    }
}

/// A message the socket cannot read: over `limits.max_body_bytes` (told, then closed), or a
/// broken socket.
async fn broken(err: &axum::Error, tx: &mut Outbox) -> End {
    let too_large = std::error::Error::source(err)
        .and_then(|source| source.downcast_ref::<tungstenite::Error>())
        .and_then(|err| match err {
            tungstenite::Error::Capacity(tungstenite::error::CapacityError::MessageTooLong {
                max_size,
                ..
            }) => Some(*max_size),
            _ => None,
        });
    match too_large {
        Some(limit) => {
            let _ = refuse(ProxyError::BodyTooLarge { limit }, tx).await;
            End::TooLarge
        }
        None => End::Gone,
    }
}

fn busy() -> ProxyError {
    ProxyError::InvalidRequest {
        message: "a response is already running on this connection: wait for its response.completed (or error) before the next response.create".into(),
        param: None,
        code: "response_already_in_flight",
    }
}

fn not_text() -> ProxyError {
    ProxyError::InvalidRequest {
        message: "send each response.create as a JSON text message, not binary".into(),
        param: None,
        code: "invalid_message_type",
    }
}

/// The proxy's own refusal as an `error` event, rendered (logged, counted) once in OpenAI's shape.
async fn refuse(err: ProxyError, tx: &mut Outbox) -> Flow {
    let response = err.into_response();
    let message = error_message(response.status(), response.into_body()).await;
    sent(tx.send(message).await)
}

/// An error answer (the pipeline's or the proxy's own) as one `error` event.
async fn error_message(status: StatusCode, body: Body) -> Message {
    let body = axum::body::to_bytes(body, MAX_ERROR_BODY)
        .await
        .unwrap_or_default();
    Message::Text(socket::error_event(status.as_u16(), &body).into())
}

/// A send that failed means the client is gone.
fn sent(result: Result<(), axum::Error>) -> Flow {
    result.map_or(Flow::Closed(End::Gone), |()| Flow::Open)
}
