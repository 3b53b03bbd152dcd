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

/// `"finish_reason"` followed by `:` and a string, whitespace allowed between: one scan. An
/// OpenAI chunk carries `"finish_reason":null` until its last, so the key alone tells nothing.
pub fn names_a_finish(data: &[u8]) -> bool {
    FINISH_KEY.find_iter(data).any(|at| {
        data[at + FINISH_KEY.needle().len()..]
            .trim_ascii_start()
            .strip_prefix(b":")
            .is_some_and(|value| value.trim_ascii_start().starts_with(b"\""))
    })
}

/// Whether `bytes`, arriving at an event boundary, are whole events none of which could end or
/// fail the answer, so decoding them can be skipped: they end with a blank line, no event in them
/// can pass the decoder's bound, and none of them holds what `ends_answer` and `is_error_event`
/// look for. No needle holds a line break, so an event's data (its `data:` lines joined) holds one
/// only where one line of the raw bytes does; a `"finish_reason"` not followed by `null` on its
/// own line (a string, a value on another line) sends the bytes to the decoder.
fn tells_nothing(bytes: &[u8], max_event: usize) -> bool {
    bytes.len() <= max_event
        && (bytes.ends_with(b"\n\n") || bytes.ends_with(b"\n\r\n"))
        && FINISH_KEY
            .find_iter(bytes)
            .all(|at| null_follows(&bytes[at + FINISH_KEY.needle().len()..]))
        && DONE_KEY.find(bytes).is_none()
        && !super::may_name_an_error(bytes)
}

/// The sentinel's searcher, built once as `FINISH_KEY` is. (One aho-corasick pass for all three
/// needles was tried: it took about six times the instructions of the three SIMD scans, every `"`
/// of a JSON chunk starting a candidate.)
static DONE_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(DONE.as_bytes()));

/// `: null` next, with only spaces and tabs around the colon (no line break).
fn null_follows(after: &[u8]) -> bool {
    let blanks = |s: &[u8]| s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    let after = &after[blanks(after)..];
    after
        .strip_prefix(b":")
        .is_some_and(|value| value[blanks(value)..].starts_with(b"null"))
}

/// Watches a stream go by for the end of its answer, event by event (split-safe: the SSE
/// decoder), for a caller that forwards the bytes itself (passthrough): it only observes, and
/// once the end is seen it reads nothing more.
pub struct EndWatch {
    decoder: Decoder,
    /// The most one event may hold (the decoder's bound).
    max_event: usize,
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
            max_event,
            state: Watch::Open,
        }
    }

    /// Bytes of the stream, in any split. Returns whether the answer has ended.
    pub fn observe(&mut self, bytes: &[u8]) -> bool {
        if self.state != Watch::Open {
            return self.ended();
        }
        // Most chunks of a stream are whole events that end nothing: the decoder's copy and
        // split would tell nothing more than the scan that says so.
        if self.decoder.is_empty() && tells_nothing(bytes, self.max_event) {
            return false;
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
    fn whole_events_that_end_nothing_are_not_decoded() {
        let middle = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\" : null}]}\n\ndata: {\"choices\":[],\"finish_reason\":null}\r\n\r\n";
        assert!(tells_nothing(middle, 1 << 20));
        let mut watch = EndWatch::new(1 << 20);
        // Neither ended nor failed (the decoder would be empty after these whole events either
        // way, so its state tells nothing of which path was taken).
        assert!(!watch.observe(middle));
        assert!(!watch.ended() && !watch.failed());
        // Not at an event boundary, past the bound, or holding a needle: decoded.
        assert!(!tells_nothing(b"data: {\"finish_reason\":null}\n", 1 << 20));
        assert!(!tells_nothing(middle, 16));
        for held in [
            "data: [DONE]\n\n",
            "data: {\"error\":{\"message\":\"x\"}}\n\n",
            "data: {\"choices\":[{\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":\n\n",
        ] {
            assert!(!tells_nothing(held.as_bytes(), 1 << 20), "{held}");
        }
    }

    #[test]
    fn a_finish_whose_value_is_on_another_line_still_ends_the_answer() {
        // The value after a comment line, and after the key's own line: the joined data ends
        // the answer though the raw bytes show `null` or nothing after the key on its line.
        for stream in [
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\"\n:null\ndata: :\"stop\"}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\ndata: \"stop\"}]}\n\n",
        ] {
            let mut watch = EndWatch::new(1 << 20);
            assert!(watch.observe(stream.as_bytes()), "{stream:?}");
        }
        let mut watch = EndWatch::new(1 << 20);
        assert!(!watch.observe(b"data: {\"error\":{\"message\":\"over capacity\"}}\n\n"));
        assert!(watch.failed());
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
