//! Stream → stream shaping. Every event is forwarded with its original bytes unless it must change
//! (a tool call into the client's dialect, cached tokens into OpenAI's words: `usage`).
//!
//! One rule for what is not an answer chunk, here and in the folder: an upstream error object
//! (`{"error": …}`) is forwarded and ends the answer (the client gets that one error, nothing
//! added); an event whose data is not a JSON object (garbage, a half chunk, non-UTF-8) is not
//! forwarded, and the stream ends with one `upstream_invalid_event` error (502 when folded).

use std::sync::Arc;

use bytes::Bytes;

use super::calls::StreamCalls;
use crate::api::stream::Chunk;
use crate::conversation::mapping::CallMapper;
use crate::sse::{Decoder, Event, EventTooLarge};

pub struct Shaper {
    decoder: Decoder,
    include_usage: bool,
    calls: Option<StreamCalls>,
    /// A `finish_reason`, the `DONE` sentinel or the upstream's own error event went by: nothing
    /// is to be added at the end.
    ended: bool,
    /// A `finish_reason` or the sentinel went by: the client has the whole answer.
    answered: bool,
}

/// Why the shaper stopped a stream: the caller ends it with one error event.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error(transparent)]
    TooLarge(#[from] EventTooLarge),
    /// An event that is not a Chat Completions chunk (what it was, cut short).
    #[error("the upstream sent an event that is not a chat completions chunk: {0}")]
    Invalid(String),
    /// A chunk the proxy wrote again (its held calls taken out) cannot be written as JSON: the
    /// proxy's failure, not the upstream's.
    #[error("cannot write a reshaped chunk as JSON: {0}")]
    Encode(#[source] serde_json::Error),
}

impl Shaper {
    pub fn new(include_usage: bool) -> Self {
        Self {
            decoder: Decoder::new(),
            include_usage,
            calls: None,
            ended: false,
            answered: false,
        }
    }

    /// Also translates tool calls into the client's dialect.
    pub fn with_calls(mut self, mapper: Arc<dyn CallMapper>) -> Self {
        self.calls = Some(StreamCalls::new(mapper));
        self
    }

    /// Caps one upstream event at `max_event` bytes (`limits.max_sse_event_bytes`).
    pub fn with_max_event(mut self, max_event: usize) -> Self {
        self.decoder = Decoder::with_limit(max_event);
        self
    }

    /// Feeds upstream bytes; appends what the client must receive to `out`. An event past the
    /// size limit is an error: the caller ends the stream.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Bytes>) -> Result<(), ShapeError> {
        self.decoder.push(chunk);
        while let Some(event) = self.decoder.next_event()? {
            self.event(event, out)?;
        }
        Ok(())
    }

    /// Whether the answer's end (a `finish_reason` or the sentinel) has gone into `out`.
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// The upstream body ended. Returns whether the answer was whole (a `finish_reason` or
    /// the sentinel arrived); if not, a trailing event that lacks its blank line is dropped, so the
    /// client never gets half an event, and the caller ends the stream with an error event.
    pub fn finish(&mut self, out: &mut Vec<Bytes>) -> bool {
        if let Some(event) = self.decoder.finish() {
            if !self.ended && event.data.as_deref().is_some_and(super::ends_answer) {
                self.ended = true;
                self.answered = true;
            }
            if self.ended {
                // A trailing event after the end: forwarded if it is one, never a reason to fail.
                let _ = self.event(event, out);
            }
        }
        // Calls held back for translation are whole events; they go out even before an error.
        if let Some(calls) = &mut self.calls {
            out.extend(calls.flush());
        }
        self.ended
    }

    fn event(&mut self, event: Event, out: &mut Vec<Bytes>) -> Result<(), ShapeError> {
        if let Some(data) = event.data.as_deref()
            && !super::is_done(data)
        {
            if !super::is_json_object(data) {
                return Err(ShapeError::Invalid(super::excerpt(data)));
            }
            if super::is_error_event(data) {
                self.ended = true;
                out.push(event.raw);
                return Ok(());
            }
        }
        if !self.ended && event.data.as_deref().is_some_and(super::ends_answer) {
            self.ended = true;
            self.answered = true;
        }
        if !self.include_usage && is_usage_only(&event) {
            return Ok(());
        }
        // Cached tokens in OpenAI's words too (DeepSeek names them its own way).
        let event = super::usage::normalized_event(&event).unwrap_or(event);
        if let (Some(calls), Some(data)) = (&mut self.calls, event.data.as_deref()) {
            if super::is_done(data) {
                out.extend(calls.flush());
            } else if calls.wants(data)
                && let Some(replaced) = calls.chunk(data).map_err(ShapeError::Encode)?
            {
                out.extend(replaced);
                return Ok(());
            }
        }
        out.push(event.raw);
        Ok(())
    }
}

/// Built once (`memmem::find` builds a searcher per call; this runs on every event).
static USAGE_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"usage\""));

/// The trailing `choices: []` chunk that carries only usage.
fn is_usage_only(event: &Event) -> bool {
    let Some(data) = event.data.as_deref() else {
        return false;
    };
    // Cheap pre-check so ordinary deltas are never parsed.
    if USAGE_KEY.find(data).is_none() {
        return false;
    }
    crate::protocols::chat::chunk::parse_event::<Chunk>(data)
        .is_ok_and(|c| c.choices.is_empty() && c.usage.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n",
        "data: [DONE]\n\n",
    );

    fn run(include_usage: bool, pieces: &[&str]) -> String {
        let mut shaper = Shaper::new(include_usage);
        let mut out = Vec::new();
        for p in pieces {
            shaper.push(p.as_bytes(), &mut out).expect("small events");
        }
        shaper.finish(&mut out);
        out.iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    #[test]
    fn usage_chunk_kept_when_asked_bytes_unchanged() {
        assert_eq!(run(true, &[STREAM]), STREAM);
    }

    #[test]
    fn usage_chunk_dropped_when_not_asked() {
        let expected = STREAM.replace(
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n",
            "",
        );
        let (a, b) = STREAM.split_at(57);
        assert_eq!(run(false, &[a, b]), expected);
    }

    #[test]
    fn a_stream_without_its_end_is_reported_and_its_half_event_dropped() {
        let mut shaper = Shaper::new(true);
        let mut out = Vec::new();
        let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        shaper.push(first.as_bytes(), &mut out).expect("small");
        shaper
            .push(b"data: {\"choices\":[{\"ind", &mut out)
            .expect("small");
        assert!(!shaper.finish(&mut out));
        assert_eq!(out, [Bytes::from(first)]);
    }

    #[test]
    fn usage_inside_a_content_chunk_is_not_touched() {
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}],\"usage\":{\"total_tokens\":1}}\n\n";
        assert_eq!(run(false, &[s]), s);
    }
}
