//! Response shaping for harnesses that rewrite requests: what the client gets back when the upstream
//! always streams. Pure and synchronous: bytes in, bytes out; the route drives it.
//!
//! - `Shaper`: the client asked for a stream. Events pass through with their raw bytes; only the
//!   usage chunk the client did not ask for is dropped (and, with an alias profile, tool calls are
//!   translated).
//! - `Folder`: the client asked for one JSON answer; the upstream stream is folded into it.

pub mod calls;
pub mod fold;
pub mod shaper;
pub mod synthetic;

pub use calls::{CallMapper, CallRoute};
pub use fold::{FoldError, Folder};
pub use shaper::Shaper;

/// Whether these bytes (one SSE event or line of a Chat Completions stream) mark the end of the
/// answer: a string `finish_reason` or `[DONE]`. A stream that ends without either was cut short.
/// A byte search, so passthrough can use it without parsing.
pub fn ends_answer(bytes: &[u8]) -> bool {
    [
        &b"\"finish_reason\":\""[..],
        b"\"finish_reason\": \"",
        b"[DONE]",
    ]
    .iter()
    .any(|marker| memchr::memmem::find(bytes, marker).is_some())
}

/// How the route must treat a successful upstream response.
pub enum ResponsePlan {
    /// Bytes go to the client untouched.
    Passthrough,
    /// The upstream was asked to stream; the client gets what it asked for.
    Reshape(Reshape),
}

pub struct Reshape {
    /// The client asked for SSE (`stream: true`).
    pub client_stream: bool,
    /// The client asked for the usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Translates tool calls into the client's dialect; `None` leaves them as they are.
    pub calls: Option<std::sync::Arc<dyn CallMapper>>,
}
