//! An answer's bytes read for its witness (`answer_witness`) where nothing else parses them: a
//! streaming Chat client's answer (its text deltas go on as they came), passthrough's, an answer
//! sent as one JSON. Every item goes on unchanged. With only the memo to feed, an event is parsed
//! only if it mentions reasoning or tool calls. A chunk laid out as the last plain one parsed is
//! read by its text or call arguments alone (`chat::layout`).
//!
//! Owns: the decoding and parse of those bytes. Must not: change an item, or keep more than
//! `MAX_JSON` of a JSON answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

use super::answer_witness::AnswerWitness;
use crate::conversation::answer::AnswerWatcher;
use crate::protocols::chat::chunk::AnswerChunkView;
use crate::protocols::chat::is_done;
use crate::protocols::chat::layout::LearntChunk;
use crate::sse::Decoder;

/// Non-streamed answers are read up to this size.
const MAX_JSON: usize = 256 * 1024;

impl AnswerWitness {
    /// `body` read for this witness by the byte tap (nothing else parses it).
    pub fn tap<S>(self, body: S, sse: bool) -> AnswerTap<S> {
        AnswerTap {
            inner: body,
            witness: self,
            sse,
            decoder: Decoder::new(),
            learnt: None,
            json: Vec::new(),
        }
    }
}

/// Built once: the memo-only tap's test of whether an event is worth parsing.
static REASONING: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"reasoning"));
static TOOL_CALLS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"tool_calls"));

/// An answer's bytes read for its witness, where nothing else parses them; every item goes on
/// unchanged.
pub struct AnswerTap<S> {
    inner: S,
    witness: AnswerWitness,
    sse: bool,
    decoder: Decoder,
    /// The last plain chunk parsed: the next laid out alike is read by its one string alone.
    learnt: Option<LearntChunk>,
    json: Vec<u8>,
}

impl<S> AnswerTap<S> {
    fn bytes(&mut self, chunk: &[u8]) {
        if self.witness.failed {
            return;
        }
        if !self.sse {
            if self.json.len() + chunk.len() <= MAX_JSON {
                self.json.extend_from_slice(chunk);
            } else {
                self.witness.failed();
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
                    self.witness.failed();
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
        if !self.witness.reads_text()
            && REASONING.find(data).is_none()
            && TOOL_CALLS.find(data).is_none()
        {
            return;
        }
        // Laid out as the last plain chunk: what it told the witness, with this string.
        if let Some(learnt) = &self.learnt
            && let Some(string) = learnt.string_in(data)
        {
            if learnt.call.is_none() {
                self.witness.text(&string);
            }
            if learnt.finish_reason.is_some() {
                self.witness.finished();
            }
            if let Some(id) = learnt.call.as_ref().and_then(|piece| piece.id()) {
                self.witness.call(id);
            }
            return;
        }
        let Ok(chunk) = crate::protocols::chat::chunk::parse_event::<AnswerChunkView<'_>>(data)
        else {
            return;
        };
        LearntChunk::learn_answer(&mut self.learnt, data, &chunk);
        if chunk.error.is_some() {
            self.witness.failed();
            return;
        }
        let Some(mut choice) = chunk.answer else {
            return;
        };
        let witness = &mut self.witness;
        if let Some(reasoning) = choice.delta.reasoning_text() {
            witness.reasoning(&reasoning);
        }
        if let Some(signature) = choice.delta.reasoning_signature.take() {
            witness.signature(&signature);
        }
        if let Some(redacted) = choice.delta.reasoning_redacted.take() {
            witness.redacted(&redacted);
        }
        if let Some(text) = choice.delta.text() {
            witness.text(&text);
        }
        if choice.finish_reason.is_some() {
            witness.finished();
        }
        for call in choice.delta.tool_calls.into_iter().flatten() {
            if let Some(id) = call.id {
                witness.call(&id);
            }
        }
    }

    /// The answer's bytes ended: the last event, or the whole JSON answer, then the witness's end.
    fn finish(&mut self) {
        if self.sse
            && let Some(event) = self.decoder.finish()
        {
            self.event(event.data.as_deref());
        }
        if !self.sse && !self.witness.failed {
            self.read_json();
        }
        self.witness.ended();
    }

    fn read_json(&mut self) {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&self.json) else {
            self.witness.failed();
            return;
        };
        let message = value.pointer("/choices/0/message");
        if let Some(text) = message
            .and_then(|m| m.get("content"))
            .and_then(|c| c.as_str())
        {
            self.witness.text(text);
        }
        if let Some(text) = message.and_then(|m| {
            ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|key| m.get(*key).and_then(|r| r.as_str()))
        }) {
            self.witness.reasoning(text);
        }
        for call in message
            .and_then(|m| m.get("tool_calls"))
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(id) = call.get("id").and_then(|id| id.as_str()) {
                self.witness.call(id);
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
            Poll::Ready(Some(Err(_))) => self.witness.failed(),
            Poll::Ready(None) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::StreamExt;

    use super::*;
    use crate::memory::anchors::Anchors;
    use crate::memory::answer_witness::{Anchor, Taps};
    use crate::memory::facts::exchange_digest;

    /// An id-less turn's answer, its text chunks and its call's pieces each laid out alike (read
    /// by their layout after the first), anchors the conversation under the exchange of its whole
    /// text and its call, as the next turn's history carries it.
    #[tokio::test]
    async fn an_answer_read_by_its_layouts_anchors_its_whole_exchange() {
        let text = |t: &str| {
            format!(
                "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\n"
            )
        };
        let piece = |a: &str| {
            format!(
                "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{a}\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
            )
        };
        let stream = [
            text("Listing"),
            text(" the"),
            text(" files\\n"),
            text("now."),
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n".to_owned(),
            piece("{}"),
            piece(""),
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n".to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let anchors = Arc::new(Anchors::new(16));
        let anchor = Anchor {
            anchors: anchors.clone(),
            owner: "owner".into(),
            conversation: "conv_1".into(),
            user_text: "list the files".into(),
        };
        let taps = Taps {
            anchor: Some(anchor),
            memo: None,
            answer: None,
        };
        let pieces: Vec<Result<Bytes, ()>> = stream
            .as_bytes()
            .chunks(5)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let tap = AnswerWitness::new(taps, true).tap(futures_util::stream::iter(pieces), true);
        tap.for_each(|_| async {}).await;
        let whole = exchange_digest("list the files", "Listing the files\nnow.", &["call_1"])
            .expect("a digest");
        assert_eq!(anchors.find("owner", &[whole]).as_deref(), Some("conv_1"));
    }
}
