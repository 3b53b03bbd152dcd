//! Thin handlers: extract → call → map. Every front's route (`FRONTS`) goes through one
//! `pipeline`; what the proxied routes share has a file each: `extract` (path and body, bounded),
//! `headers` (both ways), `passthrough_body` (an upstream body forwarded as it comes),
//! `answer_end` (how an answer's end is known).
//!
//! One file per front (`chat`, `responses` with `responses_ws` for its WebSocket, `messages`,
//! `gemini`) and `FRONTS`, the one list of them: the server mounts each front's routes from it,
//! `rewrite --protocol` takes its names and metrics label by them. The pipeline's stages have a
//! file each: `inbound`, `turn`, `answering` (`actions`, `correct`, `checks`), `answer` (a Chat
//! client's answer) and `render` (any other's), `local` (an answer given without the upstream).
//! Published for the server: `RequestId`, `ResponseFacts`, `ConnectionScope`.

pub mod actions;
pub mod answer;
pub mod answer_end;
pub mod answering;
pub mod cache_scope;
pub mod chat;
pub mod checks;
pub mod correct;
pub mod count_tokens;
pub mod dropped_tools;
pub mod error_response;
pub mod extract;
pub mod forward;
pub mod front;
pub mod gemini;
pub mod headers;
pub mod health;
pub mod inbound;
pub mod local;
pub mod messages;
pub mod meter;
pub mod passthrough_body;
pub mod pipeline;
pub mod render;
pub mod responses;
pub mod responses_ws;
pub mod titles;
pub mod turn;
pub mod ui;
pub mod upstream_path;

// What the server's access log reads of a proxied answer: whether the answer ended normally,
// and whether it is a stream.
pub use crate::upstream::is_event_stream;
pub use answer_end::AnswerFinished;

/// Every client protocol the proxy serves, by its front: the one list a protocol joins (besides
/// its folder under `protocols/` and its route file here). The server mounts each one's routes
/// (`server::router`), `rewrite` takes its names for `--protocol`, metrics label by them.
pub const FRONTS: &[front::Front] = &[
    chat::FRONT,
    responses::FRONT,
    messages::FRONT,
    gemini::FRONT,
];

/// The front named `name` (`ClientProtocol::name`).
pub fn front_named(name: &str) -> Option<front::Front> {
    FRONTS
        .iter()
        .copied()
        .find(|front| front.protocol.name() == name)
}

/// The request's id: the client's `x-request-id` when sane, else a fresh UUID. Set by the server's
/// access-log middleware in request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// What a connection's upgraded socket (a WebSocket, `responses_ws`) keeps of the connection it
/// came on, put in each request's extensions by the server's accept loop: hyper hands the socket
/// over and ends the connection's task, so the socket holds what that task held.
#[derive(Clone)]
pub struct ConnectionScope {
    /// Held while the socket lives: the connection's place in `limits.max_connections` and in the
    /// shutdown's drain.
    pub hold: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    /// Shutdown began: finish the response running, then close.
    pub stopping: tokio_util::sync::CancellationToken,
    /// The grace period is over: close now.
    pub cut: tokio_util::sync::CancellationToken,
}

/// Facts a handler reports for the access log, via response extensions.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseFacts {
    pub harness: Option<&'static str>,
    pub upstream_status: Option<u16>,
    /// The client protocol (`ClientProtocol::name`) of a proxied request.
    pub protocol: Option<&'static str>,
}
