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
    'read: while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        decoder.push(&chunk);
        while let Some(event) = decoder.next_event()? {
            handle(event.data.as_deref(), &mut raw)?;
            if raw.len() >= MAX_TITLE_TEXT {
                break 'read;
            }
        }
    }
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
