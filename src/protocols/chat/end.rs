//! Where a Chat Completions answer ends, read from its events: the `DONE` sentinel as an event's
//! whole data, or a chunk whose choice carries a `finish_reason`. The one place that knows the
//! sentinel; every reader of the upstream's stream (shaper, folder, answer events, the title
//! readers, passthrough's watch) asks here. Decided on whole events, never on bytes that look
//! like them: a model whose text spells the sentinel's event or `"finish_reason"` ends nothing.

use bytes::Bytes;

use super::chunk::ChunkView;
use crate::sse::{Decoder, Event};

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
            && crate::protocols::chat::chunk::parse_event::<ChunkView<'_>>(data)
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

/// Watches a stream go by for the end of its answer, event by event (split-safe: the SSE
/// decoder), for a caller that forwards the bytes itself (passthrough): it only observes, and
/// once the end is seen it reads nothing more.
pub struct EndWatch {
    decoder: Decoder,
    state: Watch,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    Open,
    Ended,
    /// The upstream's own error event went by (`{"error": …}`): the client was told the answer
    /// failed, by the upstream's words; it is neither complete nor cut.
    Failed,
    /// An event grew past the decoder's limit: whether the answer ended cannot be told.
    Unknown,
}

impl EndWatch {
    /// `max_event`: the most one event may hold (`limits.max_sse_event_bytes`).
    pub fn new(max_event: usize) -> Self {
        Self {
            decoder: Decoder::with_limit(max_event),
            state: Watch::Open,
        }
    }

    /// Bytes of the stream, in any split. Returns whether the answer has ended.
    pub fn observe(&mut self, bytes: &[u8]) -> bool {
        if self.state != Watch::Open {
            return self.ended();
        }
        self.decoder.push(bytes);
        loop {
            match self.decoder.next_event() {
                Ok(Some(event)) if event.data.as_deref().is_some_and(ends_answer) => {
                    self.close(Watch::Ended);
                    break;
                }
                Ok(Some(event)) if event.data.as_deref().is_some_and(super::is_error_event) => {
                    self.close(Watch::Failed);
                    break;
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    self.close(Watch::Unknown);
                    break;
                }
            }
        }
        self.ended()
    }

    /// The stream's body ended: whether its answer did. A trailing event without its blank line
    /// counts if it is whole and ends the answer; an answer that cannot be told is not called cut.
    pub fn finish(&mut self) -> bool {
        if self.state == Watch::Open
            && let Some(event) = self.decoder.finish()
            && let Some(data) = event.data.as_deref()
        {
            if ends_answer(data) {
                self.close(Watch::Ended);
            } else if super::is_error_event(data) {
                self.close(Watch::Failed);
            }
        }
        self.state != Watch::Open
    }

    /// Whether the upstream's own error event went by (the answer failed; the client knows).
    pub fn failed(&self) -> bool {
        self.state == Watch::Failed
    }

    /// Whether the end went by.
    pub fn ended(&self) -> bool {
        self.state == Watch::Ended
    }

    fn close(&mut self, state: Watch) {
        self.state = state;
        // Nothing more is read: the held bytes go.
        self.decoder = Decoder::with_limit(0);
    }
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

    #[test]
    fn the_watch_decides_on_whole_events_in_any_split() {
        let text =
            r#"{"choices":[{"index":0,"delta":{"content":"data: [DONE]"},"finish_reason":null}]}"#;
        for stream in [
            format!("data: {text}\n\ndata: {FINISH}\n\n"),
            format!("data: {text}\r\rdata: [DONE]\r\r"),
            format!("data: {text}\n\ndata: [DONE]"),
        ] {
            for split in 1..stream.len() {
                let mut watch = EndWatch::new(1024);
                let (a, b) = stream.as_bytes().split_at(split);
                watch.observe(a);
                watch.observe(b);
                assert!(watch.finish(), "{stream:?} split at {split}");
            }
        }
        let mut watch = EndWatch::new(1024);
        assert!(!watch.observe(format!("data: {text}\n\ndata: {}", &FINISH[..50]).as_bytes()));
        assert!(!watch.finish());
    }

    #[test]
    fn the_upstream_s_own_error_event_is_told_not_cut_nor_ended() {
        let error = r#"{"error":{"message":"overloaded","code":"overloaded"}}"#;
        for stream in [format!("data: {error}\n\n"), format!("data: {error}")] {
            let mut watch = EndWatch::new(1024);
            watch.observe(stream.as_bytes());
            assert!(watch.finish(), "{stream:?}");
            assert!(watch.failed() && !watch.ended(), "{stream:?}");
        }
        let mut watch = EndWatch::new(1024);
        watch.observe(br#"data: {"error":null,"choices":[]}"#);
        watch.observe(b"\n\n");
        assert!(!watch.finish(), "a null error is no error");
    }

    #[test]
    fn an_event_past_the_limit_is_not_called_cut() {
        let mut watch = EndWatch::new(16);
        assert!(!watch.observe(b"data: a long event, longer than sixteen bytes"));
        assert!(watch.finish());
        assert!(!watch.ended());
    }
}
