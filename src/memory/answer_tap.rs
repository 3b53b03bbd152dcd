//! Watches a rewritten turn's upstream answer, the one reader for what the proxy remembers of
//! it: for a turn that started a conversation without a client id, once it has ended cleanly,
//! (its user text, the answer) as the conversation's anchor (`anchors`); for any turn, the
//! reasoning of an answer that made tool calls, under their ids (`reasoning_memo`), for clients
//! that do not echo it; for a turn whose exchange title waits for it, the answer's text
//! (`titles::input`). The reasoning remembered is its text, and what a Messages upstream gave
//! beside it (`reasoning_signature`, `reasoning_redacted`: its signature and redacted thinking,
//! which that server needs back). Every item is forwarded unchanged; an answer cut short or failed is not an
//! anchor (the client will not have it in its history as sent). With only the memo to feed, an
//! event is parsed only if it mentions reasoning or tool calls.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

use super::anchors::Anchors;
use crate::memory::facts::ExchangeHasher;
use crate::memory::reasoning_memo::{MAX_ENTRY_BYTES, ReasoningMemo, Thought};
use crate::protocols::chat::chunk::ChunkView;
use crate::protocols::chat::is_done;
use crate::sse::Decoder;

/// Non-streamed answers are read up to this size.
const MAX_JSON: usize = 256 * 1024;
/// The most of an answer's text kept for its title: a title reads `titles.input_chars` of it
/// (after any leaked `<think>` block), and an answer streamed to its client is not bounded.
const MAX_TITLE_TEXT: usize = 256 * 1024;

/// Who the answer's anchor belongs to.
pub struct Anchor {
    pub anchors: Arc<Anchors>,
    pub owner: String,
    pub conversation: String,
    /// The user text this turn asked (the one the answer follows in the next turn's history).
    pub user_text: String,
}

/// Whose answer's reasoning to remember.
pub struct MemoSink {
    pub memo: Arc<ReasoningMemo>,
    pub owner: String,
}

/// What a tap feeds; at least one is set.
pub struct Taps {
    pub anchor: Option<Anchor>,
    pub memo: Option<MemoSink>,
    /// An exchange title's answer half (`titles::input`).
    pub answer: Option<AnswerText>,
}

/// Built once: the memo-only tap's test of whether an event is worth parsing.
static REASONING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"reasoning"));
static TOOL_CALLS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"tool_calls"));

pub struct AnswerTap<S> {
    inner: S,
    anchor: Option<Anchor>,
    memo: Option<MemoSink>,
    answer: Option<AnswerText>,
    /// The answer's reasoning so far; `None` once past `MAX_ENTRY_BYTES` (not kept).
    reasoning: Option<Thought>,
    sse: bool,
    decoder: Decoder,
    /// The answer's text as far as a title reads it (`MAX_TITLE_TEXT`).
    title_text: String,
    /// The exchange's digest, fed as the text streams by: the text itself is never held.
    exchange: Option<ExchangeHasher>,
    call_ids: Vec<String>,
    json: Vec<u8>,
    failed: bool,
    /// A `finish_reason` arrived: the answer is whole even if nobody reads to the end.
    complete: bool,
}

impl<S> AnswerTap<S> {
    pub fn new(inner: S, taps: Taps, sse: bool) -> Self {
        let Taps {
            anchor,
            memo,
            answer,
        } = taps;
        let exchange = anchor.as_ref().map(|a| ExchangeHasher::new(&a.user_text));
        Self {
            inner,
            exchange,
            anchor,
            memo,
            answer,
            reasoning: Some(Thought::default()),
            sse,
            decoder: Decoder::new(),
            title_text: String::new(),
            call_ids: Vec::new(),
            json: Vec::new(),
            failed: false,
            complete: false,
        }
    }

    fn bytes(&mut self, chunk: &[u8]) {
        if self.failed {
            return;
        }
        if !self.sse {
            if self.json.len() + chunk.len() <= MAX_JSON {
                self.json.extend_from_slice(chunk);
            } else {
                self.failed = true;
            }
            return;
        }
        self.decoder.push(chunk);
        loop {
            match self.decoder.next_event() {
                Ok(Some(event)) => self.event(event.data.as_deref()),
                Ok(None) => break,
                // An event too large for the decoder: the answer is not one to recognise.
                Err(_) => {
                    self.failed = true;
                    break;
                }
            }
        }
    }

    fn event(&mut self, data: Option<&[u8]>) {
        let Some(data) = data.map(<[u8]>::trim_ascii) else {
            return;
        };
        if data.is_empty() {
            return;
        }
        if is_done(data) {
            self.finish();
            return;
        }
        if self.anchor.is_none()
            && self.answer.is_none()
            && REASONING.find(data).is_none()
            && TOOL_CALLS.find(data).is_none()
        {
            return;
        }
        let Ok(chunk) = serde_json::from_slice::<ChunkView<'_>>(data) else {
            return;
        };
        if chunk.error.is_some() {
            self.failed = true;
            return;
        }
        let Some(mut choice) = chunk.answer() else {
            return;
        };
        if let Some(reasoning) = choice.delta.reasoning_text() {
            self.add_reasoning(&reasoning);
        }
        if let Some(signature) = choice.delta.reasoning_signature.take() {
            self.add_signature(&signature);
        }
        if let Some(redacted) = choice.delta.reasoning_redacted.take() {
            self.add_redacted(redacted.into_owned());
        }
        if let Some(text) = choice.delta.text() {
            self.add_text(&text);
        }
        if choice.finish_reason.is_some() {
            self.complete = true;
            // The client may stop reading here: an exchange title starting then reads it whole.
            if let Some(answer) = &self.answer {
                answer.set(&self.title_text);
            }
        }
        for call in choice.delta.tool_calls.into_iter().flatten() {
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                self.call_ids.push(id.into_owned());
            }
        }
    }

    /// Text of the answer: hashed for the exchange, and kept up to `MAX_TITLE_TEXT` for a title.
    fn add_text(&mut self, text: &str) {
        if let Some(exchange) = &mut self.exchange {
            exchange.push(text);
        }
        if self.answer.is_some() && self.title_text.len() < MAX_TITLE_TEXT {
            let end = text.floor_char_boundary(MAX_TITLE_TEXT - self.title_text.len());
            self.title_text.push_str(&text[..end]);
        }
    }

    /// The reasoning so far, if `more` bytes still fit in one memo entry; else it is dropped
    /// (`None`: an answer too large to remember).
    fn reasoning_with_room(&mut self, more: usize) -> Option<&mut Thought> {
        if self
            .reasoning
            .as_ref()
            .is_some_and(|r| r.bytes() + more > MAX_ENTRY_BYTES)
        {
            self.reasoning = None;
        }
        self.reasoning.as_mut()
    }

    fn add_reasoning(&mut self, text: &str) {
        if let Some(reasoning) = self.reasoning_with_room(text.len()) {
            reasoning.text.push_str(text);
        }
    }

    fn add_signature(&mut self, signature: &str) {
        if let Some(reasoning) = self.reasoning_with_room(signature.len()) {
            let held = reasoning.signature.get_or_insert_with(String::new);
            held.push_str(signature);
        }
    }

    fn add_redacted(&mut self, data: String) {
        if let Some(reasoning) = self.reasoning_with_room(data.len()) {
            reasoning.redacted.push(data);
        }
    }

    /// The answer ended: remember it unless it failed.
    fn finish(&mut self) {
        if self.anchor.is_none() && self.memo.is_none() && self.answer.is_none() {
            return;
        }
        if self.sse
            && let Some(event) = self.decoder.finish()
        {
            self.event(event.data.as_deref());
        }
        if !self.sse && !self.failed {
            self.read_json();
        }
        // Whatever text the client got is the answer's half, failed or not.
        if let Some(answer) = self.answer.take() {
            answer.set(&self.title_text);
        }
        if let (Some(sink), Some(reasoning)) = (self.memo.take(), self.reasoning.take())
            && !self.failed
        {
            sink.memo.remember(&sink.owner, &self.call_ids, reasoning);
        }
        let Some(anchor) = self.anchor.take() else {
            return;
        };
        // A stream that ends without a finish reason was cut: the client did not get it whole.
        if self.failed || (self.sse && !self.complete) {
            return;
        }
        let ids: Vec<&str> = self.call_ids.iter().map(String::as_str).collect();
        let digest = self.exchange.take().and_then(|h| h.finish(&ids));
        if let Some(digest) = digest {
            anchor
                .anchors
                .remember(&anchor.owner, &digest, &anchor.conversation);
        }
    }

    fn read_json(&mut self) {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&self.json) else {
            self.failed = true;
            return;
        };
        let message = value.pointer("/choices/0/message");
        if let Some(text) = message
            .and_then(|m| m.get("content"))
            .and_then(|c| c.as_str())
        {
            self.add_text(text);
        }
        if let Some(text) = message.and_then(|m| {
            ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|key| m.get(*key).and_then(|r| r.as_str()))
        }) {
            self.add_reasoning(text);
        }
        for call in message
            .and_then(|m| m.get("tool_calls"))
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(id) = call.get("id").and_then(|id| id.as_str()) {
                self.call_ids.push(id.to_owned());
            }
        }
    }
}

impl<S, E> Stream for AnswerTap<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => self.bytes(chunk),
            Poll::Ready(Some(Err(_))) => {
                self.failed = true;
                self.anchor = None;
                self.memo = None;
            }
            Poll::Ready(None) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for AnswerTap<S> {
    fn drop(&mut self) {
        // A reader may stop at the last event without waiting for the end of the body.
        if self.complete {
            self.finish();
        }
        if let Some(answer) = self.answer.take() {
            answer.set(&self.title_text);
        }
        // The calls' reasoning is worth keeping even if the client hung up after them.
        if let (Some(sink), Some(reasoning)) = (self.memo.take(), self.reasoning.take())
            && !self.failed
        {
            sink.memo.remember(&sink.owner, &self.call_ids, reasoning);
        }
    }
}

/// One answer's text, written by the answer tap and read by the title job it belongs to.
#[derive(Debug, Clone, Default)]
pub struct AnswerText(Arc<Mutex<Option<String>>>);

impl AnswerText {
    /// The answer's text so far: written when the answer says it is finished, again when it
    /// ends, so a title started at either point reads it whole.
    pub fn set(&self, text: &str) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(text.to_owned());
        }
    }

    /// The text written, or empty when the answer had none (only tool calls, or it failed
    /// before any text).
    pub fn get(&self) -> String {
        self.0
            .lock()
            .ok()
            .and_then(|slot| slot.clone())
            .unwrap_or_default()
    }
}
