//! Where a Chat Completions answer ends, read from its events: the `DONE` sentinel as an event's
//! whole data, or a chunk whose choice carries a `finish_reason`. The one place that knows the
//! sentinel; every reader of the upstream's stream (shaper, folder, answer events, the title
//! readers, passthrough) asks here. Decided on whole events, never on bytes that look
//! like them: a model whose text spells the sentinel's event or `"finish_reason"` ends nothing.

use bytes::Bytes;

use super::chunk::ChunkView;
use crate::sse::Event;

/// The data of the event that ends a Chat Completions stream.
pub const DONE: &str = "[DONE]";

/// Whether one event's data is the end sentinel (surrounding whitespace aside).
pub fn is_done(data: &[u8]) -> bool {
    data.trim_ascii() == DONE.as_bytes()
}

/// `is_done` for a decoded event.
pub fn is_done_event(event: &Event) -> bool {
    event.data.as_deref().is_some_and(is_done)
}

/// The end sentinel as an event, as the proxy writes it.
pub fn done_event() -> Bytes {
    crate::sse::data_event(DONE.as_bytes())
}

/// Whether one event's data ends the answer: it is the sentinel, or a chunk one of whose choices
/// has a `finish_reason`. The key followed by a string value is the cheap prefilter (an OpenAI
/// chunk carries `"finish_reason":null` until the end, and inside the model's text the quotes are
/// escaped); only a chunk that passes it is parsed, so a half chunk cut after the key, or a key
/// nested elsewhere, ends nothing.
pub fn ends_answer(data: &[u8]) -> bool {
    is_done(data)
        || (names_a_finish(data)
            && serde_json::from_slice::<ChunkView<'_>>(data)
                .is_ok_and(|chunk| chunk.choices.iter().any(|c| c.finish_reason.is_some())))
}

/// Built once: `memmem::find` builds a searcher per call, and this runs on every event.
static FINISH_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"finish_reason\""));

/// `"finish_reason"` followed by `:` and a string, whitespace allowed between: one scan.
fn names_a_finish(data: &[u8]) -> bool {
    FINISH_KEY.find_iter(data).any(|at| {
        data[at + FINISH_KEY.needle().len()..]
            .trim_ascii_start()
            .strip_prefix(b":")
            .is_some_and(|value| value.trim_ascii_start().starts_with(b"\""))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FINISH: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

    #[test]
    fn only_the_sentinel_or_a_chunk_s_own_finish_ends_the_answer() {
        assert!(ends_answer(b" [DONE] "));
        assert!(ends_answer(FINISH.as_bytes()));
        assert!(ends_answer(
            br#"{"choices":[{"index":0,"delta":{},"finish_reason" : "length"}]}"#
        ));
        for data in [
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}"#,
            // The model's text spelling the end, escaped as JSON escapes it.
            r#"{"choices":[{"index":0,"delta":{"content":"data: [DONE]\n\n{\"finish_reason\":\"stop\"}"},"finish_reason":null}]}"#,
            // Cut after the key: half a chunk.
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop""#,
            // The key elsewhere than a choice.
            r#"{"choices":[],"meta":{"finish_reason":"stop"}}"#,
            "[DONE] and more",
        ] {
            assert!(!ends_answer(data.as_bytes()), "{data}");
        }
    }
}
