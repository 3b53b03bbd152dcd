//! Response shaping for harnesses that rewrite requests: what the client gets back when the upstream
//! always streams. Pure and synchronous: bytes in, bytes out; the route drives it.
//!
//! - `Shaper`: the client asked for a stream. Events pass through with their raw bytes; only the
//!   usage chunk the client did not ask for is dropped (and, with an alias profile, tool calls are
//!   translated; cached tokens another upstream names its own way are added in OpenAI's words,
//!   `usage`).
//! - `Folder`: the client asked for one JSON answer; the upstream stream is folded into it.

pub mod answer;
mod call_chunk;
pub mod calls;
pub mod fold;
pub mod peek;
pub mod request;
pub mod shaper;
pub mod synthetic;
pub mod tokens;
pub mod usage;

pub use crate::conversation::mapping::{CallMapper, CallRoute, Reshape, ResponsePlan};
pub use fold::{FoldError, Folder};
pub use shaper::Shaper;

/// The upstream's Chat Completions path (below the base URL): where every translated request goes.
pub const UPSTREAM_PATH: &str = "/chat/completions";

/// Whether these bytes (one SSE event or line of a Chat Completions stream) mark the end of the
/// answer: a string `finish_reason` or `[DONE]`. A stream that ends without either was cut short.
/// A byte search, so passthrough can use it without parsing.
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
    ERROR_KEY.find(data).is_some()
        && serde_json::from_slice::<Probe>(data).is_ok_and(|probe| probe.error.is_some())
}

/// The start of an event's data, for an error message (lossy, at most 64 characters).
pub fn excerpt(data: &[u8]) -> String {
    String::from_utf8_lossy(data).chars().take(64).collect()
}

static ERROR_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));

/// Whether one event's data ends the answer: it is `[DONE]`, or a chunk whose `finish_reason`
/// is set. The key with its quotes can only be the chunk's own (inside the model's text the
/// quotes are escaped), while `[DONE]` counts only as the whole data: a model that writes
/// "[DONE]" in its answer does not end it.
pub fn ends_answer(data: &[u8]) -> bool {
    let data = data.trim_ascii();
    data == b"[DONE]"
        || FINISH_MARKERS
            .iter()
            .any(|marker| marker.find(data).is_some())
}

/// `ends_answer` for SSE text in whole lines (a forwarded chunk): any of its `data:` lines.
pub fn lines_end_answer(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').any(|line| {
        line.strip_prefix(b"data:")
            .is_some_and(|data| ends_answer(data.strip_suffix(b"\r").unwrap_or(data)))
    })
}

/// Searchers built once: `memmem::find` builds one per call, and `ends_answer` runs on every
/// forwarded event.
static FINISH_MARKERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
    std::sync::LazyLock::new(|| {
        [
            memchr::memmem::Finder::new(b"\"finish_reason\":\""),
            memchr::memmem::Finder::new(b"\"finish_reason\": \""),
        ]
    });
