//! The answer as a protocol-neutral stream of events, read from the (already shaped) upstream
//! Chat Completions stream. Every client protocol renders these events in its own shape; no
//! renderer ever parses a chat chunk itself.
//!
//! Order guaranteed to renderers: `Text`/`Reasoning`/tool-call events in upstream order; a tool
//! call's `ToolCallStart` comes before its `ToolCallArguments`, and every started call gets one
//! `ToolCallEnd` before `Finish`; exactly one terminal event (`Finish` or `Error`) ends the stream.
//! A call's arguments are held until the call ends and given as one `ToolCallArguments`, always a
//! JSON object's text (`conversation::answer::deliverable`): a renderer never streams a client
//! JSON that does not parse.

use std::borrow::Cow;

use super::chunk::AnswerChunkView;
use super::chunk::CallView;
use super::end::is_done_event;
use super::layout::LearntChunk;
use crate::conversation::answer::{AnswerEvent, Deliverable, FinishReason, Usage, deliverable};
use crate::sse::Decoder;

/// Reads a chat SSE stream (bytes in any split) into answer events.
#[derive(Default)]
pub struct ChatAnswerReader {
    decoder: Decoder,
    /// Calls started and not ended, with their arguments so far.
    open_calls: Vec<(u32, String)>,
    /// Call indexes seen so far (a call is started once, even if its id repeats).
    seen_calls: Vec<u32>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    ended: bool,
    /// The last plain chunk read in full: the next laid out alike is read by its text or call
    /// arguments alone (`chat::layout`), not parsed again.
    learnt: Option<LearntChunk>,
    /// Tests read with every event parsed, to hold the learnt layouts to it.
    #[cfg(test)]
    parses_every_event: bool,
    /// Chunks read by a learnt layout (tests).
    #[cfg(test)]
    read_by_layout: usize,
}

impl ChatAnswerReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; appends the events they complete to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<AnswerEvent>) {
        self.decoder.push(bytes);
        loop {
            let event = match self.decoder.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(too_large) => {
                    let message = too_large.to_string();
                    self.fail(message, "upstream_event_too_large", out);
                    break;
                }
            };
            if self.ended {
                continue;
            }
            if is_done_event(&event) {
                self.end(out);
                continue;
            }
            if let Some(data) = event.data.as_deref() {
                self.chunk(data, out);
            }
        }
    }

    /// The body ended (with or without the `DONE` sentinel).
    pub fn finish(&mut self, out: &mut Vec<AnswerEvent>) {
        if let Some(event) = self.decoder.finish()
            && !self.ended
        {
            if is_done_event(&event) {
                self.end(out);
            } else if let Some(data) = event.data.as_deref() {
                self.chunk(data, out);
            }
        }
        if !self.ended {
            self.end(out);
        }
    }

    /// A failure outside the stream (transport error): one terminal `Error`.
    pub fn fail(&mut self, message: String, code: &str, out: &mut Vec<AnswerEvent>) {
        if self.ended {
            return;
        }
        self.ended = true;
        out.push(AnswerEvent::Error {
            message,
            code: code.to_owned(),
        });
    }

    fn chunk(&mut self, data: &[u8], out: &mut Vec<AnswerEvent>) {
        if let Some(learnt) = &self.learnt
            && let Some(string) = learnt.string_in(data)
        {
            let finish = learnt.finish_reason.as_deref().map(FinishReason::parse);
            match &learnt.call {
                Some(piece) => {
                    let call = piece.with_arguments(string);
                    self.call(0, call, out);
                }
                None => self.text(string, out),
            }
            if finish.is_some() {
                self.finish = finish;
            }
            #[cfg(test)]
            {
                self.read_by_layout += 1;
            }
            return;
        }
        let chunk: AnswerChunkView<'_> = match crate::protocols::chat::chunk::parse_event(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                return self.fail(
                    format!("failed to parse chat completions chunk: {e}"),
                    "upstream_bad_chunk",
                    out,
                );
            }
        };
        if let Some(error) = chunk.reported_error() {
            let message = error
                .message
                .unwrap_or_else(|| "the upstream reported an error".to_owned());
            let code = error.code.as_deref().unwrap_or("upstream_error");
            return self.fail(message, code, out);
        }
        if let Some(usage) = chunk.usage
            && let Ok(usage) = serde_json::from_str::<serde_json::Value>(usage.get())
            && usage.is_object()
        {
            self.usage = Some(Usage::from_value(&usage));
        }
        #[cfg(test)]
        let learns = !self.parses_every_event;
        #[cfg(not(test))]
        let learns = true;
        if learns {
            LearntChunk::learn_answer(&mut self.learnt, data, &chunk);
        }
        // One answer: only the first choice is rendered (clients of these protocols ask for one).
        let Some(choice) = chunk.answer else {
            return;
        };
        let mut delta = choice.delta;
        // Words after a call end it: a renderer that puts them in a block of their own has
        // closed the call's block, so its arguments go first.
        if let Some(reasoning) = delta.reasoning_text() {
            self.close_calls(out);
            out.push(AnswerEvent::Reasoning(reasoning.into_owned()));
        }
        if let Some(signature) = delta.reasoning_signature.take().filter(|s| !s.is_empty()) {
            self.close_calls(out);
            out.push(AnswerEvent::ReasoningSignature(signature.into_owned()));
        }
        if let Some(data) = delta.reasoning_redacted.take().filter(|d| !d.is_empty()) {
            self.close_calls(out);
            out.push(AnswerEvent::RedactedReasoning(data.into_owned()));
        }
        if let Some(text) = delta.text() {
            self.text(text, out);
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.call(position, call, out);
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(FinishReason::parse(&reason));
        }
    }

    /// One call piece (the `position`th of its chunk): a new call is started, closing the ones
    /// before it; its arguments are held until it ends.
    fn call(&mut self, position: usize, call: CallView<'_>, out: &mut Vec<AnswerEvent>) {
        let index = call
            .index
            .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX));
        let function = call.function.unwrap_or_default();
        if !self.seen_calls.contains(&index) {
            // A new call closes the ones before it: upstreams send calls one after another.
            self.close_calls(out);
            self.seen_calls.push(index);
            self.open_calls.push((index, String::new()));
            out.push(AnswerEvent::ToolCallStart {
                index,
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| format!("call_{index}"), Cow::into_owned),
                name: function.name.map(Cow::into_owned).unwrap_or_default(),
            });
        }
        if let Some(arguments) = function.arguments.filter(|a| !a.is_empty())
            && let Some((_, held)) = self.open_calls.iter_mut().find(|(i, _)| *i == index)
        {
            held.push_str(&arguments);
        }
    }

    /// Words: after a call, they end it first.
    fn text(&mut self, text: Cow<'_, str>, out: &mut Vec<AnswerEvent>) {
        if !text.is_empty() {
            self.close_calls(out);
            out.push(AnswerEvent::Text(text.into_owned()));
        }
    }

    fn close_calls(&mut self, out: &mut Vec<AnswerEvent>) {
        for (index, arguments) in self.open_calls.drain(..) {
            let delta = match deliverable(&arguments) {
                Deliverable::Valid(text) => text.into_owned(),
                Deliverable::Flagged(flagged) => {
                    metrics::counter!("harness_proxy_invalid_tool_arguments_total").increment(1);
                    tracing::warn!(
                        length = arguments.len(),
                        "the model's tool call arguments are not a JSON object; sent under `_invalid_arguments`"
                    );
                    flagged
                }
            };
            out.push(AnswerEvent::ToolCallArguments { index, delta });
            out.push(AnswerEvent::ToolCallEnd { index });
        }
    }

    fn end(&mut self, out: &mut Vec<AnswerEvent>) {
        self.ended = true;
        self.close_calls(out);
        match self.finish.take() {
            Some(reason) => out.push(AnswerEvent::Finish {
                reason,
                usage: self.usage,
            }),
            None => out.push(AnswerEvent::Error {
                message: "the upstream stream ended before the answer finished".into(),
                code: "upstream_interrupted".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TOOL_STREAM: &str = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"hm\"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n",
        "data: [DONE]\n\n",
    );

    fn read(pieces: &[&[u8]]) -> Vec<AnswerEvent> {
        let mut reader = ChatAnswerReader::new();
        let mut out = Vec::new();
        for piece in pieces {
            reader.push(piece, &mut out);
        }
        reader.finish(&mut out);
        out
    }

    /// A call whose chunk also carries text after it (how the shaper re-emits a chunk holding
    /// text, a translated call and the finish): the call ends, arguments and all, before the
    /// text, so a renderer that closes the call's block for the text has them.
    #[test]
    fn text_after_a_call_ends_the_call_first() {
        use AnswerEvent::*;
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Listing.\"},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let events = read(&[stream.as_bytes()]);
        assert_eq!(
            events[..4],
            [
                ToolCallStart {
                    index: 0,
                    id: "c".into(),
                    name: "Bash".into()
                },
                ToolCallArguments {
                    index: 0,
                    delta: "{\"command\":\"ls\"}".into()
                },
                ToolCallEnd { index: 0 },
                Text("Listing.".into()),
            ]
        );
    }

    #[test]
    fn a_tool_stream_becomes_ordered_events() {
        use AnswerEvent::*;
        assert_eq!(
            read(&[TOOL_STREAM.as_bytes()]),
            vec![
                Reasoning("hm".into()),
                Text("Hi".into()),
                ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "bash".into()
                },
                // Held until the call ends, then given whole.
                ToolCallArguments {
                    index: 0,
                    delta: "{\"command\":\"ls\"}".into()
                },
                ToolCallEnd { index: 0 },
                ToolCallStart {
                    index: 1,
                    id: "call_b".into(),
                    name: "read".into()
                },
                ToolCallArguments {
                    index: 1,
                    delta: "{}".into()
                },
                ToolCallEnd { index: 1 },
                Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Some(Usage {
                        input_tokens: 7,
                        output_tokens: 3,
                        ..Usage::default()
                    })
                },
            ]
        );
    }

    #[test]
    fn reasoning_and_reasoning_details_are_reasoning_too() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"a\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"b\"}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"c\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"c\"}]},\"finish_reason\":\"stop\"}]}\n\n",
        );
        let events = read(&[stream.as_bytes()]);
        assert_eq!(
            events[..3],
            [
                AnswerEvent::Reasoning("a".into()),
                AnswerEvent::Reasoning("b".into()),
                AnswerEvent::Reasoning("c".into()),
            ]
        );
    }

    #[test]
    fn arguments_that_are_not_a_json_object_arrive_flagged_never_broken() {
        let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\": \\\"ls\"}}]}}]}\n\n\
            data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
        let events = read(&[stream.as_bytes()]);
        let AnswerEvent::ToolCallArguments { delta, .. } = &events[1] else {
            panic!("{events:?}");
        };
        let value: serde_json::Value = serde_json::from_str(delta).expect("parses");
        assert_eq!(value["_invalid_arguments"], "{\"command\": \"ls");
    }

    #[test]
    fn a_stream_cut_before_its_finish_is_an_interruption() {
        let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let events = read(&[cut.as_bytes()]);
        assert_eq!(events[0], AnswerEvent::Text("Hel".into()));
        assert!(
            matches!(&events[1], AnswerEvent::Error { code, .. } if code == "upstream_interrupted")
        );
        assert_eq!(events.len(), 2);
    }

    #[test]
    fn a_finish_without_done_still_finishes() {
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
        let events = read(&[s.as_bytes()]);
        assert_eq!(
            events.last(),
            Some(&AnswerEvent::Finish {
                reason: FinishReason::Stop,
                usage: None
            })
        );
    }

    #[test]
    fn an_error_object_in_the_stream_ends_it() {
        let s = "data: {\"error\":{\"message\":\"overloaded\",\"code\":\"rate_limited\"}}\n\ndata: [DONE]\n\n";
        assert_eq!(
            read(&[s.as_bytes()]),
            vec![AnswerEvent::Error {
                message: "overloaded".into(),
                code: "rate_limited".into()
            }]
        );
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(cuts in proptest::collection::vec(0..TOOL_STREAM.len(), 0..8)) {
            let bytes = TOOL_STREAM.as_bytes();
            let pieces = crate::protocols::split_at(bytes, cuts);
            prop_assert_eq!(read(&pieces), read(&[bytes]));
        }
    }

    /// Text chunks laid out alike and others among them (a finish, reasoning, calls, usage, an
    /// error, a key more, escapes, a broken one), in any order: read with layouts learnt, the
    /// events are those of reading every event in full.
    mod learnt_layouts {
        use super::*;

        fn read_all(stream: &str, every: bool) -> Vec<AnswerEvent> {
            let mut reader = ChatAnswerReader::new();
            reader.parses_every_event = every;
            let mut out = Vec::new();
            reader.push(stream.as_bytes(), &mut out);
            reader.finish(&mut out);
            out
        }

        #[test]
        fn text_chunks_laid_out_alike_are_read_by_their_text() {
            let chunk = |text: &str| {
                format!(
                    "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
                )
            };
            let stream = [chunk("a"), chunk("b"), chunk("c")].concat()
                + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            let mut reader = ChatAnswerReader::new();
            let mut out = Vec::new();
            reader.push(chunk("a").as_bytes(), &mut out);
            assert!(reader.learnt.is_some());
            reader.learnt.as_mut().expect("learnt").finish_reason = Some("length".into());
            // A chunk laid out alike is read by the layout (whose finish was changed above).
            reader.push(chunk("b").as_bytes(), &mut out);
            assert_eq!(reader.finish, Some(FinishReason::parse("length")));
            assert_eq!(read_all(&stream, false), read_all(&stream, true));
        }

        /// A call's pieces alike but for their arguments: read by the learnt piece's layout.
        #[test]
        fn call_pieces_laid_out_alike_are_read_by_their_arguments() {
            let stream = crate::protocols::chat::layout::a_call_in_pieces();
            let mut reader = ChatAnswerReader::new();
            let mut out = Vec::new();
            reader.push(stream.as_bytes(), &mut out);
            reader.finish(&mut out);
            assert_eq!(reader.read_by_layout, 2);
            assert!(out.contains(&AnswerEvent::ToolCallArguments {
                index: 0,
                delta: "{\"command\":\"ls -la src\"}".into()
            }));
            assert_eq!(read_all(&stream, false), read_all(&stream, true));
        }

        proptest! {
            #[test]
            fn reading_by_learnt_layouts_is_reading_every_event(
                stream in crate::protocols::chat::layout::a_stream(),
            ) {
                prop_assert_eq!(read_all(&stream, false), read_all(&stream, true));
            }
        }
    }
}
