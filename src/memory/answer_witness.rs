//! What the proxy remembers of a turn's answer, read once: for a turn that started a
//! conversation without a client id, once it has ended cleanly, (its user text, the answer) as
//! the conversation's anchor (`anchors`); for any turn, the reasoning of an answer that made tool
//! calls, under their ids (`reasoning_memo`), for clients that do not echo it; for a turn whose
//! exchange title waits for it, the answer's text (`titles::input`). The reasoning remembered is
//! its text, and what a Messages upstream gave beside it (`reasoning_signature`,
//! `reasoning_redacted`: its signature and redacted thinking, which that server needs back). An
//! answer cut short or failed is not an anchor (the client will not have it in its history as
//! sent).
//!
//! The witness watches the answer as the client gets it (after any correction,
//! `routes::correct`), so the anchor's text and calls and the memo's call ids are the ones the
//! client's next turn sends back. The reader that parses each event anyway feeds it
//! (`conversation::answer::AnswerWatcher`: the folder, the answer-event reader); where nothing
//! else parses the answer, `answer_tap` reads its bytes for it.
//!
//! Owns: what is kept of one answer and when it is handed over. Must not: parse an event itself.

use std::sync::{Arc, Mutex, PoisonError};

use super::anchors::Anchors;
use crate::conversation::answer::AnswerWatcher;
use crate::memory::facts::ExchangeHasher;
use crate::memory::reasoning_memo::{MAX_ENTRY_BYTES, ReasoningMemo, Thought};

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

/// What a witness feeds; at least one is set.
pub struct Taps {
    pub anchor: Option<Anchor>,
    pub memo: Option<MemoSink>,
    /// An exchange title's answer half (`titles::input`).
    pub answer: Option<AnswerText>,
}

/// One answer as the proxy remembers it, fed as it is read; what it learnt is kept when the
/// answer ends (`ended`), or when it is dropped after saying it finished.
pub struct AnswerWitness {
    anchor: Option<Anchor>,
    memo: Option<MemoSink>,
    answer: Option<AnswerText>,
    /// The answer's reasoning so far; `None` once past `MAX_ENTRY_BYTES` (not kept).
    reasoning: Option<Thought>,
    /// The answer's text as far as a title reads it (`MAX_TITLE_TEXT`).
    title_text: String,
    /// The exchange's digest, fed as the text streams by: the text itself is never held.
    exchange: Option<ExchangeHasher>,
    call_ids: Vec<String>,
    /// A streamed answer is whole only once it says it finished; a JSON one when it parses.
    streamed: bool,
    /// The answer failed (an error event, a cut or unreadable body): nothing of it is kept, and
    /// the byte tap stops reading for it.
    pub(super) failed: bool,
    /// A finish reason arrived: the answer is whole even if nobody reads to the end.
    complete: bool,
}

impl AnswerWitness {
    pub fn new(taps: Taps, streamed: bool) -> Self {
        let Taps {
            anchor,
            memo,
            answer,
        } = taps;
        let exchange = anchor.as_ref().map(|a| ExchangeHasher::new(&a.user_text));
        Self {
            exchange,
            anchor,
            memo,
            answer,
            reasoning: Some(Thought::default()),
            title_text: String::new(),
            call_ids: Vec::new(),
            streamed,
            failed: false,
            complete: false,
        }
    }

    /// The answer's text matters (an anchor or a title waits for it), not only its reasoning
    /// and calls.
    pub(super) fn reads_text(&self) -> bool {
        self.anchor.is_some() || self.answer.is_some()
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

    /// The answer ended: remember it unless it failed.
    fn end(&mut self) {
        self.hand_over();
        let Some(anchor) = self.anchor.take() else {
            return;
        };
        // A stream that ends without a finish reason was cut: the client did not get it whole.
        if self.failed || (self.streamed && !self.complete) {
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

    /// What is kept of any answer, whole or not: the text the client got as the title's answer
    /// half (failed or not), and the calls' reasoning unless the answer failed. Once.
    fn hand_over(&mut self) {
        if let Some(answer) = self.answer.take() {
            answer.set(&self.title_text);
        }
        if let (Some(sink), Some(reasoning)) = (self.memo.take(), self.reasoning.take())
            && !self.failed
        {
            sink.memo.remember(&sink.owner, &self.call_ids, reasoning);
        }
    }
}

impl AnswerWatcher for AnswerWitness {
    /// Text of the answer: hashed for the exchange, and kept up to `MAX_TITLE_TEXT` for a title.
    fn text(&mut self, text: &str) {
        if let Some(exchange) = &mut self.exchange {
            exchange.push(text);
        }
        if self.answer.is_some() && self.title_text.len() < MAX_TITLE_TEXT {
            let end = text.floor_char_boundary(MAX_TITLE_TEXT - self.title_text.len());
            self.title_text.push_str(&text[..end]);
        }
    }

    fn reasoning(&mut self, text: &str) {
        // Reasoning after a signed block is another block (a corrected answer's, or the next
        // of an interleaved answer): the server signed each alone, so the latest is kept whole.
        if self
            .reasoning
            .as_ref()
            .is_some_and(|r| r.signature.is_some())
        {
            self.reasoning = Some(Thought::default());
        }
        if let Some(reasoning) = self.reasoning_with_room(text.len()) {
            reasoning.text.push_str(text);
        }
    }

    fn signature(&mut self, signature: &str) {
        if let Some(reasoning) = self.reasoning_with_room(signature.len()) {
            let held = reasoning.signature.get_or_insert_with(String::new);
            held.push_str(signature);
        }
    }

    fn redacted(&mut self, data: &str) {
        if let Some(reasoning) = self.reasoning_with_room(data.len()) {
            reasoning.redacted.push(data.to_owned());
        }
    }

    fn call(&mut self, id: &str) {
        if !id.is_empty() {
            self.call_ids.push(id.to_owned());
        }
    }

    fn finished(&mut self) {
        self.complete = true;
        // The client may stop reading here: an exchange title starting then reads it whole.
        if let Some(answer) = &self.answer {
            answer.set(&self.title_text);
        }
    }

    fn failed(&mut self) {
        self.failed = true;
    }

    fn ended(&mut self) {
        self.end();
    }
}

impl Drop for AnswerWitness {
    fn drop(&mut self) {
        // A reader may stop at the last event without waiting for the end of the body.
        if self.complete {
            self.end();
        }
        // The calls' reasoning is worth keeping even if the client hung up after them.
        self.hand_over();
    }
}

/// One answer's text, written by the answer's witness and read by the title job it belongs to.
#[derive(Debug, Clone, Default)]
pub struct AnswerText(Arc<Mutex<Option<String>>>);

impl AnswerText {
    /// The answer's text so far: written when the answer says it is finished, again when it
    /// ends, so a title started at either point reads it whole.
    pub fn set(&self, text: &str) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(text.to_owned());
    }

    /// The text written, or empty when the answer had none (only tool calls, or it failed
    /// before any text).
    pub fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Item, ToolCall};
    use crate::memory::reasoning_memo::Echoed;

    /// The reasoning the memo gives back to a turn echoing `id` without any.
    fn recovered(memo: &ReasoningMemo, id: &str) -> Option<String> {
        let mut items = vec![Item::ToolCall(ToolCall {
            id: Some(id.to_owned()),
            name: "bash".to_owned(),
            input: CallInput::Arguments("{}".to_owned()),
        })];
        memo.recover("owner", &mut items, Echoed::Sign);
        items.iter().find_map(|item| match item {
            Item::Reasoning(r) => Some(r.text.clone()),
            _ => None,
        })
    }

    fn witness(memo: &Arc<ReasoningMemo>) -> AnswerWitness {
        let sink = MemoSink {
            memo: memo.clone(),
            owner: "owner".to_owned(),
        };
        let taps = Taps {
            anchor: None,
            memo: Some(sink),
            answer: None,
        };
        AnswerWitness::new(taps, true)
    }

    /// A corrected answer reaches the client as two answers' events, each with its reasoning
    /// signed by the server alone: the memo keeps the latest block whole (the two joined would
    /// carry a signature the server refuses), under the calls the client got.
    #[test]
    fn reasoning_after_a_signed_block_is_remembered_on_its_own() {
        let memo = Arc::new(ReasoningMemo::default());
        let mut watched = witness(&memo);
        watched.reasoning("The tool has no timeout; ");
        watched.signature("c2lnMQ==");
        watched.reasoning("Run ls ");
        watched.reasoning("without it.");
        watched.signature("c2lnMg==");
        watched.call("call_1");
        watched.finished();
        watched.ended();
        assert_eq!(
            recovered(&memo, "call_1").as_deref(),
            Some("Run ls without it.")
        );

        // Unsigned reasoning (a Chat upstream's) is one text, however it comes.
        let mut watched = witness(&memo);
        watched.reasoning("First, ");
        watched.reasoning("then.");
        watched.call("call_2");
        watched.finished();
        drop(watched);
        assert_eq!(recovered(&memo, "call_2").as_deref(), Some("First, then."));
    }

    /// A stream that failed leaves nothing in the memo, even after its calls.
    #[test]
    fn a_failed_answer_is_not_remembered() {
        let memo = Arc::new(ReasoningMemo::default());
        let mut watched = witness(&memo);
        watched.reasoning("Listing.");
        watched.call("call_3");
        watched.failed();
        watched.ended();
        assert_eq!(recovered(&memo, "call_3"), None);
    }
}
