//! A recording fake model server: a real HTTP server on 127.0.0.1:0 that records every request
//! (method, path, headers, body bytes) and plays a scripted answer chosen per request. A `HEAD`
//! (Claude Code's connection check) is kept apart (`super::heads`), so the scripted answers and
//! the request counts stay those of the model's requests.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::StreamExt;
use tokio::sync::{Notify, mpsc};

use super::heads::{Head, Heads};

/// DeepSeek V4's answer to an assistant tool-call message without its reasoning (thinking mode).
pub const DEEPSEEK_THINKING_400: &str = r#"{"error":{"message":"The `reasoning_content` in the thinking mode must be passed back to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#;
/// The reasoning `FakeUpstream::deepseek_thinking` streams before its tool call.
pub const THINKING_TEXT: &str = "The user wants the files; I will run ls.";

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("recorded body is JSON")
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// Whether this is a title request (its system prompt is the title prompt).
    pub fn is_title(&self) -> bool {
        let body = String::from_utf8_lossy(&self.body);
        body.contains("You are a title generator")
    }
}

/// A step of a scripted streaming answer.
#[derive(Clone)]
pub enum Step {
    Send(Vec<u8>),
    Sleep(Duration),
    /// Wait until the test calls `notify_one` on it.
    Wait(Arc<Notify>),
    /// Wait until the gate has a permit (`add_permits` once releases every waiter, even those
    /// not waiting yet, unlike `Notify`).
    Gate(Arc<tokio::sync::Semaphore>),
    /// Abort the connection mid-body.
    Cut,
}

/// A scripted answer.
#[derive(Clone)]
pub enum Reply {
    /// Status, content type and body, sent at once.
    Full {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
        headers: Vec<(&'static str, String)>,
    },
    /// 200 `text/event-stream` with the given steps.
    Stream {
        steps: Vec<Step>,
        headers: Vec<(&'static str, String)>,
    },
    /// Never send the response head.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: &str) -> Self {
        Self::Full {
            status,
            content_type: "application/json",
            body: body.as_bytes().to_vec(),
            headers: Vec::new(),
        }
    }
    pub fn sse(chunks: &[&str]) -> Self {
        Self::Stream {
            steps: chunks
                .iter()
                .map(|c| Step::Send(c.as_bytes().to_vec()))
                .collect(),
            headers: Vec::new(),
        }
    }
    pub fn steps(steps: Vec<Step>) -> Self {
        Self::Stream {
            steps,
            headers: Vec::new(),
        }
    }
}

type Responder = Arc<dyn Fn(&Recorded, usize) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Shared {
    recorded: Arc<Mutex<Vec<Recorded>>>,
    heads: Heads,
    responder: Responder,
    /// Told when a streamed answer's body was dropped before it finished (the proxy hung up).
    dropped: mpsc::UnboundedSender<String>,
}

pub struct FakeUpstream {
    pub addr: SocketAddr,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    heads: Heads,
    dropped: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeUpstream {
    /// Starts with a responder that sees each request and its 0-based arrival number.
    pub async fn start(
        responder: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake upstream");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = mpsc::unbounded_channel();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let heads = Heads::default();
        let shared = Shared {
            recorded: recorded.clone(),
            heads: heads.clone(),
            responder: Arc::new(responder),
            dropped: tx,
        };
        let app = Router::new().fallback(handle).with_state(shared);
        // As real model servers do: no Nagle delay on small writes.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            recorded,
            heads,
            dropped: tokio::sync::Mutex::new(rx),
            task,
        }
    }

    /// Always the same answer.
    pub async fn fixed(reply: Reply) -> Self {
        Self::start(move |_, _| reply.clone()).await
    }

    /// Answers in order; the last one repeats.
    pub async fn queue(replies: Vec<Reply>) -> Self {
        let replies = Mutex::new(VecDeque::from(replies));
        Self::start(move |_, _| {
            let mut q = replies.lock().expect("lock");
            if q.len() > 1 {
                q.pop_front().expect("non-empty")
            } else {
                q.front().cloned().expect("at least one reply")
            }
        })
        .await
    }

    /// A model server enforcing DeepSeek V4's thinking-mode rule: an assistant message with
    /// `tool_calls` but no `reasoning_content` gets DeepSeek's 400. Otherwise a conversation
    /// ending in a tool result gets the text `Done.`, and any other (a first turn) reasoning
    /// `THINKING_TEXT` then one `bash` call `{"command":"ls"}` with id `call_ds_1`. Title
    /// requests get the text `Listing files`.
    pub async fn deepseek_thinking() -> Self {
        Self::start(|r: &Recorded, _| {
            let body = r.json();
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let unreasoned = messages.iter().any(|m| {
                m["role"] == "assistant"
                    && m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
                    && !m["reasoning_content"].is_string()
            });
            if unreasoned {
                return Reply::json(400, DEEPSEEK_THINKING_400);
            }
            let chunk = |delta: serde_json::Value, finish: Option<&str>| {
                let chunk = serde_json::json!({"id": "ds-1", "object": "chat.completion.chunk",
                    "created": 1, "model": "deepseek-v4",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {chunk}\n\n")
            };
            let done = "data: [DONE]\n\n".to_owned();
            let stream = if r.is_title() {
                vec![
                    chunk(serde_json::json!({"content": "Listing files"}), Some("stop")),
                    done,
                ]
            } else if messages.last().is_some_and(|m| m["role"] == "tool") {
                vec![
                    chunk(serde_json::json!({"role": "assistant", "reasoning_content": "The listing came back."}), None),
                    chunk(serde_json::json!({"content": "Done."}), Some("stop")),
                    done,
                ]
            } else {
                vec![
                    chunk(serde_json::json!({"role": "assistant", "reasoning_content": THINKING_TEXT}), None),
                    chunk(serde_json::json!({"tool_calls": [{"index": 0, "id": "call_ds_1", "type": "function",
                        "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}), None),
                    chunk(serde_json::json!({}), Some("tool_calls")),
                    done,
                ]
            };
            Reply::steps(stream.into_iter().map(|c| Step::Send(c.into_bytes())).collect())
        })
        .await
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().expect("lock").clone()
    }

    /// Requests other than title requests.
    pub fn main_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_title())
            .collect()
    }

    /// The `HEAD` requests received, in order.
    pub fn heads(&self) -> Vec<Head> {
        self.heads.seen()
    }

    /// How every later `HEAD` is answered (`Reply::Hang`: never).
    pub fn answer_heads(&self, reply: Reply) {
        self.heads.answer_with(reply);
    }

    pub fn count(&self) -> usize {
        self.recorded.lock().expect("lock").len()
    }

    /// Waits until `n` requests have arrived (bounded, so a broken test fails instead of hanging).
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Recorded> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if self.count() >= n {
                return self.requests();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "expected {n} upstream requests, saw {}",
                self.count()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits up to `within` for a streamed answer to be abandoned by the proxy.
    pub async fn wait_for_drop(&self, within: Duration) -> Option<String> {
        let mut rx = self.dropped.lock().await;
        tokio::time::timeout(within, rx.recv()).await.ok().flatten()
    }
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(ToString::to_string)
            .unwrap_or_default(),
        headers: parts.headers,
        body,
    };
    if recorded.method == "HEAD" {
        let after = shared.recorded.lock().expect("lock").len();
        return shared.heads.answer(recorded, after).await;
    }
    let n = {
        let mut all = shared.recorded.lock().expect("lock");
        all.push(recorded.clone());
        all.len() - 1
    };
    match (shared.responder)(&recorded, n) {
        Reply::Full {
            status,
            content_type,
            body,
            headers,
        } => {
            let mut builder = Response::builder()
                .status(status)
                .header("content-type", content_type);
            for (k, v) in headers {
                builder = builder.header(k, v);
            }
            builder.body(Body::from(body)).expect("response")
        }
        Reply::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Reply::Stream { steps, headers } => {
            let guard = DropGuard {
                tx: shared.dropped.clone(),
                path: recorded.path.clone(),
                finished: false,
            };
            let stream = futures_util::stream::unfold(
                (steps.into_iter(), guard),
                |(mut steps, mut guard)| async move {
                    loop {
                        match steps.next() {
                            None => {
                                guard.disarm();
                                return None;
                            }
                            Some(Step::Send(bytes)) => {
                                return Some((Ok(Bytes::from(bytes)), (steps, guard)));
                            }
                            Some(Step::Sleep(d)) => tokio::time::sleep(d).await,
                            Some(Step::Wait(n)) => n.notified().await,
                            Some(Step::Gate(gate)) => drop(gate.acquire().await),
                            Some(Step::Cut) => {
                                guard.disarm();
                                return Some((Err(std::io::Error::other("cut")), (steps, guard)));
                            }
                        }
                    }
                },
            )
            .boxed();
            let mut builder = Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache");
            for (k, v) in headers {
                builder = builder.header(k, v);
            }
            builder.body(Body::from_stream(stream)).expect("response")
        }
    }
}

struct DropGuard {
    tx: mpsc::UnboundedSender<String>,
    path: String,
    finished: bool,
}

impl DropGuard {
    /// The answer ended as scripted; dropping it now is not a hang-up.
    fn disarm(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.tx.send(self.path.clone());
        }
    }
}
