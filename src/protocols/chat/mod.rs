//! Response shaping for harnesses that rewrite requests: what the client gets back when the upstream
//! always streams. Pure and synchronous: bytes in, bytes out; the route drives it.
//!
//! - `Shaper`: the client asked for a stream. Events pass through with their raw bytes; only the
//!   usage chunk the client did not ask for is dropped (and, with an alias profile, tool calls are
//!   translated; cached tokens another upstream names its own way are added in OpenAI's words,
//!   `usage`).
//! - `Folder`: the client asked for one JSON answer; the upstream stream is folded into it.
//!
//! Also the one reader of a Chat Completions answer's wire, which every reader of the upstream's
//! stream shares (the title readers and passthrough's watch too): `chunk` (a borrowed view of one
//! streamed chunk: delta content, reasoning, tool calls, finish reason, usage, error; `layout`, a
//! chunk laid out as the last one parsed but for its text or arguments, read by them), `end` (the
//! `DONE` sentinel and where an answer ends; `EndWatch`, passthrough's observer), and below, the
//! checks every forwarded event gets. The rest: `request` (a Chat client's body → the
//! conversation), `peek` (message views of a body passthrough forwards), `synthetic` (a JSON
//! answer as a stream, when the upstream ignored `stream: true`), `calls` and `call_chunk` (tool
//! calls back into the client's dialect through the `CallMapper`), `usage`, `tokens` (the input
//! estimate) and `answer` (the chat stream read into answer events).

pub mod answer;
mod call_chunk;
pub mod calls;
pub mod chunk;
pub mod end;
pub mod fold;
pub mod layout;
pub mod peek;
pub mod request;
pub mod shaper;
pub mod synthetic;
pub mod tokens;
pub mod usage;

pub use crate::conversation::mapping::{CallMapper, CallRoute, Reshape, ResponsePlan};
pub use end::{DONE, EndWatch, ends_answer, is_done, names_a_finish};
pub use fold::{FoldError, Folder};
pub use shaper::Shaper;

/// Chat Completions, as `routes::FRONTS` serves it.
pub const PROTOCOL: super::ClientProtocol = super::ClientProtocol::named("chat");

/// The upstream's Chat Completions path (below the base URL): where every translated request goes.
pub const UPSTREAM_PATH: &str = "/chat/completions";

/// Whether an event's data is a JSON object's text, by its shape (valid UTF-8, `{…}`): the cheap
/// check every forwarded event gets; a chunk that passes it but does not parse is the client's
/// to judge, as from the upstream itself.
pub fn is_json_object(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let text = text.trim();
    text.starts_with('{') && text.ends_with('}')
}

/// Whether an event is the upstream's own error object (`{"error": …}` at the top level).
pub fn is_error_event(data: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        error: Option<serde::de::IgnoredAny>,
    }
    may_name_an_error(data)
        && crate::protocols::chat::chunk::parse_event::<Probe>(data)
            .is_ok_and(|probe| probe.error.is_some())
}

/// Whether bytes hold the `"error"` key anywhere: `is_error_event`'s prefilter.
pub(crate) fn may_name_an_error(bytes: &[u8]) -> bool {
    ERROR_KEY.find(bytes).is_some()
}

/// The start of an event's data, for an error message (lossy, at most 64 characters).
pub fn excerpt(data: &[u8]) -> String {
    String::from_utf8_lossy(data).chars().take(64).collect()
}

static ERROR_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
