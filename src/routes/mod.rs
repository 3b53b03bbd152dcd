//! Thin handlers: extract → call → map. Shared plumbing for proxied requests lives in `proxy`.

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
pub mod messages;
pub mod meter;
pub mod proxy;
pub mod render;
pub mod responses;
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

/// Facts a handler reports for the access log, via response extensions.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseFacts {
    pub harness: Option<&'static str>,
    pub upstream_status: Option<u16>,
    /// The client protocol (`ClientProtocol::name`) of a proxied request.
    pub protocol: Option<&'static str>,
}
