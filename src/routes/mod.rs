//! Thin handlers: extract → call → map. Shared plumbing for proxied requests lives in `proxy`.

pub mod actions;
pub mod answer;
pub mod cache_scope;
pub mod chat;
pub mod correct;
pub mod dropped_tools;
pub mod extract;
pub mod forward;
pub mod front;
pub mod gemini;
pub mod health;
pub mod inbound;
pub mod local;
pub mod messages;
pub mod meter;
pub mod proxy;
pub mod render;
pub mod responses;
pub mod responses_ws;
pub mod titles;
pub mod turn;
pub mod ui;
pub mod upstream_path;

// What the server's access log reads of a proxied answer, published here so it need not reach
// into `proxy`: whether the answer ended normally, and whether it is a stream.
pub use proxy::{AnswerFinished, is_event_stream};

/// The front of a client protocol, as its route serves it.
pub fn front(protocol: crate::protocols::ClientProtocol) -> front::Front {
    use crate::protocols::ClientProtocol;
    match protocol {
        ClientProtocol::Chat => chat::FRONT,
        ClientProtocol::Responses => responses::FRONT,
        ClientProtocol::Messages => messages::FRONT,
        ClientProtocol::Gemini => gemini::FRONT,
    }
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
