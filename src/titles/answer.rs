//! Reading a title request's answer: a stream folded into its text (each delta published live
//! as it arrives), or a bounded non-streamed or error body.

use futures_util::StreamExt;

use super::live::LiveTitle;
use crate::protocols::chat::chunk::AnswerChunkView;
use crate::protocols::chat::is_done;
use crate::sse::{Decoder, EventTooLarge};
use crate::upstream::{BodyStream, UpstreamError};

/// How much of a non-streamed or error answer is read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a title stream gave no text; its message becomes the failed record's reason.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("failed to parse title chunk: {0}")]
    Chunk(#[source] serde_json::Error),
    /// The upstream's error event: its message, as it worded it.
    #[error("{0}")]
    Reported(String),
    #[error("title stream failed: {0}")]
    Upstream(#[from] UpstreamError),
    #[error("title stream failed: {0}")]
    Event(#[from] EventTooLarge),
}

/// The most of a title stream's text read: a title is a few words, after at most a leaked
/// `<think>` block; past it the stream is dropped (which cancels the upstream request) and the
/// title is made of what was read. An upstream answering a title request at length would
/// otherwise be held whole, twice (the text, and the live deltas).
pub const MAX_TITLE_TEXT: usize = 64 * 1024;

/// Folds a title stream, publishing each text delta. Reasoning deltas are not title text.
pub async fn stream_text(mut body: BodyStream, live: &LiveTitle) -> Result<String, StreamError> {
    let mut decoder = Decoder::new();
    let mut raw = String::new();
    let handle = |data: Option<&[u8]>, raw: &mut String| -> Result<(), StreamError> {
        let Some(data) = data else { return Ok(()) };
        let data = data.trim_ascii();
        if data.is_empty() || is_done(data) {
            return Ok(());
        }
        let chunk: AnswerChunkView<'_> =
            crate::protocols::chat::chunk::parse_event(data).map_err(StreamError::Chunk)?;
        if let Some(error) = chunk.reported_error() {
            return Err(StreamError::Reported(error_message(&error.raw)));
        }
        if let Some(text) = chunk.answer.and_then(|c| c.delta.text()) {
            let text = cut(&text, MAX_TITLE_TEXT.saturating_sub(raw.len()));
            raw.push_str(text);
            live.push_delta(text);
        }
        Ok(())
    };
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        decoder.push(&chunk);
        while let Some(event) = decoder.next_event()? {
            handle(event.data.as_deref(), &mut raw)?;
            if raw.len() >= MAX_TITLE_TEXT {
                // Full: the rest of the chunk (often half an event) is not read, not even to flush
                // it, or a title made of what was read would fail on a cut event.
                return Ok(raw);
            }
        }
    }
    // The stream ended: an event it did not close with a blank line is still an event.
    if let Some(event) = decoder.finish() {
        handle(event.data.as_deref(), &mut raw)?;
    }
    Ok(raw)
}

/// The first `max` bytes of `text`, at a char boundary.
pub fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

pub async fn read_limited(mut body: BodyStream) -> String {
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        out.extend_from_slice(&chunk);
        if out.len() >= MAX_ANSWER_BYTES {
            out.truncate(MAX_ANSWER_BYTES);
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `error.message` of an OpenAI error body, else the text itself (shortened).
pub fn error_message(text: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    });
    let mut message = message.unwrap_or_else(|| text.trim().to_owned());
    if message.chars().count() > 300 {
        message = message.chars().take(300).collect::<String>() + "…";
    }
    message
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures_util::stream;

    use super::{MAX_TITLE_TEXT, stream_text};
    use crate::titles::live::LiveHub;
    use crate::titles::store::contract::record;
    use crate::upstream::{BodyStream, UpstreamError};

    fn text_event(text: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]})
        )
    }

    fn body(chunks: Vec<String>) -> BodyStream {
        Box::pin(stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, UpstreamError>(Bytes::from(c))),
        ))
    }

    #[tokio::test]
    async fn a_title_answered_at_length_is_made_of_what_was_read_though_the_chunk_ends_mid_event() {
        let hub = LiveHub::default();
        let live = hub.register(record("o", "t", 0)).expect("registered");
        let piece = "y".repeat(1024);
        // One chunk: enough text to fill the title, then the first half of one more event.
        let mut chunk: String = (0..MAX_TITLE_TEXT / 1024 + 1)
            .map(|_| text_event(&piece))
            .collect();
        let next = text_event(&piece);
        chunk.push_str(&next[..next.len() / 2]);

        let text = stream_text(body(vec![chunk]), &live)
            .await
            .expect("a full title is not failed by the event after it");

        assert_eq!(text.len(), MAX_TITLE_TEXT);
        assert!(text.bytes().all(|b| b == b'y'));
        assert_eq!(live.pending_record().text, text, "what was published live");
    }

    #[tokio::test]
    async fn a_last_event_the_stream_did_not_close_is_read() {
        let hub = LiveHub::default();
        let live = hub.register(record("o", "t", 0)).expect("registered");
        let last = text_event(" title");
        let unclosed = last.trim_end().to_owned();

        let text = stream_text(body(vec![text_event("A"), unclosed]), &live)
            .await
            .expect("read");

        assert_eq!(text, "A title");
    }

    #[tokio::test]
    async fn a_cut_event_at_the_end_of_a_short_answer_still_fails_the_title() {
        let hub = LiveHub::default();
        let live = hub.register(record("o", "t", 0)).expect("registered");
        let event = text_event("A title");

        let failed = stream_text(body(vec![event[..event.len() / 2].to_owned()]), &live).await;

        assert!(
            failed
                .expect_err("half an event is not a title")
                .to_string()
                .starts_with("failed to parse title chunk"),
        );
    }
}
