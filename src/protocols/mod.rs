//! Client protocols: the dialects agents speak to the proxy (Chat Completions, Responses,
//! Anthropic Messages, Gemini). The upstream always speaks Chat Completions.
//!
//! An inbound adapter (one folder per protocol) parses a client request once into the
//! protocol-neutral `conversation::Conversation` — what every harness rebuilds and the title facts
//! read — and gives a `Renderer` that turns the answer events (`conversation::answer`) back into
//! that protocol's stream or its one JSON answer. `chat` is also the upstream's protocol: its
//! answer side (shaper, fold, answer reader) serves Chat Completions clients directly. Adapters are
//! pure and synchronous: no I/O, no axum. A protocol's parse sees the whole `Request` (method,
//! the route's path parameters, query, headers, body), so what a protocol needs of the request
//! is its own business. Adding a protocol = one folder here (naming its `PROTOCOL`), one route
//! file (its `Front`), and its line in `routes::FRONTS`, the one list of the protocols served.
//! `upstream_error` reads what an upstream's error body says, for the protocols that reshape it.
//! `ClientProtocol` is a protocol's name (logs, metrics, `rewrite --protocol`); `Inbound` is what
//! a parse gives: the conversation, its `Renderer` (none for Chat) and the hosted tools dropped.

pub mod chat;
pub mod gemini;
pub mod json_body;
pub mod messages;
pub mod responses;
pub mod upstream_error;

use bytes::Bytes;
use http::{HeaderMap, Method};

pub use crate::conversation::answer::{AnswerEvent, FinishReason, Usage};
pub use chat::answer::ChatAnswerReader;
pub use json_body::JsonAnswer;

/// The protocol a client spoke, by the name logs and metrics know it by. Each protocol's folder
/// names its own (`chat::PROTOCOL`, …); which are served is `routes::FRONTS`' business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientProtocol(&'static str);

impl ClientProtocol {
    /// A protocol named `name` (lower case, one word: a metric label and a `--protocol` value).
    pub const fn named(name: &'static str) -> Self {
        Self(name)
    }

    /// Label for logs and metrics.
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// What a protocol's parse sees of one client request.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a Method,
    /// The route's path parameters by name (the harness `name`; Gemini's `model` and `action`).
    pub params: &'a [(String, String)],
    /// The query, without what the protocol's route took out of it (Gemini's `key`).
    pub query: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a Bytes,
}

impl Request<'_> {
    /// The path parameter `name`, if the route has one.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What an inbound adapter made of one client request.
pub struct Inbound {
    /// The request in the protocol-neutral model: what the harness rebuilds and titles read.
    pub conversation: crate::conversation::Conversation,
    /// Renders the answer in the client's protocol; `None` for Chat Completions clients, whom the
    /// chat answer side (`protocols::chat`: raw events forwarded, folded JSON) serves.
    pub renderer: Option<Box<dyn Renderer>>,
    /// Client tools that have no Chat Completions form (hosted tools), reported in
    /// `x-harness-dropped-tools`.
    pub dropped_tools: Vec<String>,
}

/// Why a whole (non-streamed) answer could not be rendered: the upstream's answer failed, as it
/// was reported (`message`, `code`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerFailed {
    pub message: String,
    pub code: String,
}

/// Why `Renderer::into_json` gave no body: the answer failed upstream, or the proxy could not
/// write its own JSON (never an empty body in its place).
#[derive(Debug, thiserror::Error)]
pub enum NoJson {
    #[error("{}", .0.message)]
    Failed(AnswerFailed),
    #[error("cannot write the answer as JSON: {0}")]
    Encode(#[from] serde_json::Error),
}

impl From<AnswerFailed> for NoJson {
    fn from(failed: AnswerFailed) -> Self {
        Self::Failed(failed)
    }
}

/// Answer events → one protocol's bytes. Fed every event in order; `start` once, first.
pub trait Renderer: Send {
    /// What to send as soon as the upstream accepted the request (e.g. `response.created`).
    fn start(&mut self, out: &mut Vec<Bytes>);
    /// One answer event, rendered as zero or more SSE events appended to `out`.
    fn event(&mut self, event: AnswerEvent, out: &mut Vec<Bytes>);
    /// A keep-alive event to send while the upstream is silent, if the protocol has one.
    fn keepalive(&self) -> Option<Bytes> {
        None
    }
    /// For a client that did not stream: the whole answer as one JSON body, once every event
    /// was given to `event` (whose output the caller discarded).
    fn into_json(self: Box<Self>) -> Result<JsonAnswer, NoJson>;
    /// Said before `start` when only `into_json` will be read: a renderer may then skip rendering
    /// events, so that it holds the answer once (not again in every `…done` event).
    fn holding_whole(&mut self) {}
    /// Said before `start`: the key to seal the answer's reasoning with, for a protocol with an
    /// opaque field the client echoes (`conversation::seal`).
    fn seal_reasoning(&mut self, _seal: std::sync::Arc<crate::conversation::seal::ReasoningSeal>) {}
}

/// Reads a client's request body as `T`, saying where it is broken: not JSON at all is
/// `InvalidJson`, a field of the wrong shape names its path in the `what` request. Unknown fields
/// are the wire types' business (they ignore them).
pub fn read_request<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, crate::error::ProxyError> {
    use crate::error::ProxyError;
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ProxyError::invalid_json(inner)
        } else {
            ProxyError::InvalidRequest {
                message: format!("invalid {what} request at `{path}`: {inner}"),
                param: None,
                code: "invalid_request",
            }
        }
    })
}

/// `bytes` cut at `cuts` (any order, repeats allowed): the pieces a split-invariance test feeds a
/// reader or renderer one by one.
#[cfg(test)]
pub(crate) fn split_at(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
    cuts.sort_unstable();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        pieces.push(&bytes[start..cut]);
        start = cut;
    }
    pieces.push(&bytes[start..]);
    pieces
}
