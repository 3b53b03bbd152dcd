//! Folds a Chat Completions stream into one `chat.completion` for a client that did not stream:
//! content, reasoning, tool calls (assembled by index), finish reason and usage. Most of an
//! answer is text chunks laid out alike but for their text: after one is parsed in full, the
//! next is folded by its text alone (`chat::layout`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

use super::chunk::{CallView, ChunkView, content_text};
use super::layout::LearntChunk;
use crate::api::stream::{
    CompletedFunction, CompletedToolCall, Completion, CompletionChoice, CompletionMessage,
};
use crate::api::text::Text;
use crate::conversation::answer::AnswerWatcher;
use crate::protocols::json_body::{JsonAnswer, LONG_TEXT, Slots, written};
use crate::sse::{Decoder, EventTooLarge};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FoldError {
    #[error("failed to parse chat completions chunk: {0}")]
    BadChunk(String),
    /// The upstream sent an error object inside the stream.
    #[error("the upstream reported an error in its stream")]
    Upstream(Value),
    #[error(transparent)]
    TooLarge(#[from] EventTooLarge),
    /// The stream ended with neither a `finish_reason` nor the `DONE` sentinel: it was cut short.
    #[error(
        "the upstream stream ended before the answer finished (no finish_reason, no {})",
        super::DONE
    )]
    Unfinished,
}

#[derive(Default)]
pub struct Folder {
    decoder: Decoder,
    id: Option<String>,
    created: Option<i64>,
    model: Option<String>,
    system_fingerprint: Option<Value>,
    choices: BTreeMap<u32, ChoiceAcc>,
    usage: Option<Value>,
    /// A `finish_reason` or the `DONE` sentinel arrived: the answer is whole.
    ended: bool,
    /// Told what the answer (choice 0) holds as it is folded: the proxy's memory of it, which
    /// then needs no parse of its own.
    watcher: Option<Box<dyn AnswerWatcher>>,
    /// The last plain chunk folded in full: the next laid out alike is folded by its text or call
    /// arguments alone (`chat::layout`), not parsed again.
    learnt: Option<LearntChunk>,
    /// Tests fold with every event parsed, to hold the learnt layouts to it.
    #[cfg(test)]
    parses_every_event: bool,
    /// Events folded by a learnt layout (tests).
    #[cfg(test)]
    folded_by_layout: usize,
}

#[derive(Default)]
struct ChoiceAcc {
    role: Option<String>,
    content: Option<Text>,
    reasoning: Option<Text>,
    calls: Vec<CallAcc>,
    finish_reason: Option<String>,
}

struct CallAcc {
    index: Option<u32>,
    id: Option<String>,
    kind: Option<String>,
    name: String,
    arguments: String,
}

impl Folder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Caps one upstream event at `max_event` bytes (`limits.max_sse_event_bytes`).
    pub fn with_max_event(mut self, max_event: usize) -> Self {
        self.decoder = Decoder::with_limit(max_event);
        self
    }

    /// `watcher` is told what the answer holds as it is folded, and how it ended.
    pub fn watched(mut self, watcher: Box<dyn AnswerWatcher>) -> Self {
        self.watcher = Some(watcher);
        self
    }

    /// The answer cannot be folded (its body failed, or `push` refused it): its watcher knows.
    pub fn failed(&mut self) {
        if let Some(mut watcher) = self.watcher.take() {
            watcher.failed();
            watcher.ended();
        }
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<(), FoldError> {
        self.decoder.push(bytes);
        while let Some(event) = self.decoder.next_event()? {
            self.event(event.data.as_deref())?;
        }
        Ok(())
    }

    pub fn finish(mut self, fallback_model: &str) -> Result<Completion, FoldError> {
        let watcher = self.watcher.take();
        let folded = self.complete(fallback_model);
        if let Some(mut watcher) = watcher {
            if folded.is_err() {
                watcher.failed();
            }
            watcher.ended();
        }
        folded
    }

    fn complete(mut self, fallback_model: &str) -> Result<Completion, FoldError> {
        // A trailing event without its blank line is where a cut fell: half an event is an
        // interruption (as for a streaming client), not garbage.
        if let Some(event) = self.decoder.finish()
            && !self.ended
        {
            match self.event(event.data.as_deref()) {
                Err(FoldError::BadChunk(_)) => return Err(FoldError::Unfinished),
                other => other?,
            }
        }
        if !self.ended {
            return Err(FoldError::Unfinished);
        }
        let choices = if self.choices.is_empty() {
            vec![CompletionChoice {
                index: 0,
                message: CompletionMessage {
                    role: "assistant".into(),
                    content: Some(Text::new()),
                    reasoning_content: None,
                    tool_calls: None,
                },
                finish_reason: None,
            }]
        } else {
            self.choices
                .into_iter()
                .map(|(index, acc)| acc.complete(index))
                .collect()
        };
        let mut extra = serde_json::Map::new();
        if let Some(fp) = self.system_fingerprint {
            extra.insert("system_fingerprint".into(), fp);
        }
        Ok(Completion {
            id: self.id.unwrap_or_else(|| "chatcmpl-harness-proxy".into()),
            object: "chat.completion".into(),
            created: self
                .created
                .unwrap_or_else(|| chrono::Utc::now().timestamp()),
            model: self.model.unwrap_or_else(|| fallback_model.to_owned()),
            choices,
            usage: self.usage,
            extra,
        })
    }

    fn event(&mut self, data: Option<&[u8]>) -> Result<(), FoldError> {
        let Some(data) = data else { return Ok(()) };
        if super::is_done(data) {
            self.ended = true;
            return Ok(());
        }
        if data.trim_ascii().is_empty() {
            return Ok(());
        }
        if let Some(learnt) = &self.learnt
            && let Some(string) = learnt.string_in(data)
        {
            let (role, finish) = (learnt.role.clone(), learnt.finish_reason.clone());
            let (text, call) = match &learnt.call {
                None => (Some(string), None),
                Some(piece) => (None, Some(piece.with_arguments(string))),
            };
            self.fold_plain(text.as_deref(), call, role, finish);
            #[cfg(test)]
            {
                self.folded_by_layout += 1;
            }
            return Ok(());
        }
        let chunk: ChunkView<'_> = crate::protocols::chat::chunk::parse_event(data)
            .map_err(|e| FoldError::BadChunk(e.to_string()))?;
        #[cfg(test)]
        let learns = !self.parses_every_event;
        #[cfg(not(test))]
        let learns = true;
        if learns {
            LearntChunk::learn_chunk(&mut self.learnt, data, &chunk);
        }
        if let Some(error) = chunk.error {
            return Err(FoldError::Upstream(to_value(error)?));
        }
        if self.id.is_none() {
            self.id = chunk.id.map(Cow::into_owned);
        }
        self.created = self.created.or(chunk.created);
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if self.system_fingerprint.is_none()
            && let Some(fingerprint) = chunk.system_fingerprint
        {
            self.system_fingerprint = Some(to_value(fingerprint)?);
        }
        if let Some(usage) = chunk.usage {
            let mut usage = to_value(usage)?;
            super::usage::normalize(&mut usage);
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            let acc = self.choices.entry(choice.index).or_default();
            let mut watcher = self.watcher.as_deref_mut().filter(|_| choice.index == 0);
            let mut delta = choice.delta;
            if let Some(content) = delta.content
                && let Some(text) =
                    content_text(content).map_err(|e| FoldError::BadChunk(e.to_string()))?
            {
                if let Some(watcher) = watcher.as_mut() {
                    watcher.text(&text);
                }
                acc.content.get_or_insert_with(Text::new).push_str(&text);
            }
            if let Some(reasoning) = delta.reasoning_text() {
                if let Some(watcher) = watcher.as_mut() {
                    watcher.reasoning(&reasoning);
                }
                acc.reasoning
                    .get_or_insert_with(Text::new)
                    .push_str(&reasoning);
            }
            // Not the client's (a Chat client has no place for them), but the memo's: the
            // server needs them back with the reasoning.
            if let Some(watcher) = watcher.as_mut() {
                if let Some(signature) = &delta.reasoning_signature {
                    watcher.signature(signature);
                }
                if let Some(redacted) = &delta.reasoning_redacted {
                    watcher.redacted(redacted);
                }
            }
            if let Some(role) = delta.role
                && acc.role.as_deref() != Some(&*role)
            {
                acc.role = Some(role.into_owned());
            }
            for call in delta.tool_calls.unwrap_or_default() {
                if let (Some(watcher), Some(id)) = (watcher.as_mut(), &call.id) {
                    watcher.call(id);
                }
                acc.add_call(call);
            }
            if let Some(reason) = choice.finish_reason {
                self.ended = true;
                acc.finish_reason = Some(reason.into_owned());
                if let Some(watcher) = watcher.as_mut() {
                    watcher.finished();
                }
            }
        }
        Ok(())
    }

    /// What folding a plain chunk does (`event`, for one laid out as the learnt one): its text or
    /// its one call piece, then its role and finish, in the order `event` folds them.
    fn fold_plain(
        &mut self,
        text: Option<&str>,
        call: Option<CallView<'_>>,
        role: Option<String>,
        finish: Option<String>,
    ) {
        let acc = self.choices.entry(0).or_default();
        let mut watcher = self.watcher.as_deref_mut();
        if let Some(text) = text {
            if let Some(watcher) = watcher.as_mut() {
                watcher.text(text);
            }
            acc.content.get_or_insert_with(Text::new).push_str(text);
        }
        if let Some(role) = role
            && acc.role.as_deref() != Some(&*role)
        {
            acc.role = Some(role);
        }
        if let Some(call) = call {
            if let (Some(watcher), Some(id)) = (watcher.as_mut(), &call.id) {
                watcher.call(id);
            }
            acc.add_call(call);
        }
        if let Some(reason) = finish {
            self.ended = true;
            acc.finish_reason = Some(reason);
            if let Some(watcher) = watcher.as_mut() {
                watcher.finished();
            }
        }
    }
}

/// A folded answer as the client's JSON body: its text held once (`json_body`), the content,
/// reasoning and arguments of a long answer written piece by piece.
pub fn answer(mut folded: Completion) -> Result<JsonAnswer, serde_json::Error> {
    let text_bytes = folded.text_bytes();
    if text_bytes < LONG_TEXT {
        return written(&folded, text_bytes).map(JsonAnswer::whole);
    }
    let slots = Slots::new();
    let mut texts = Vec::new();
    for choice in &mut folded.choices {
        let message = &mut choice.message;
        for text in [&mut message.content, &mut message.reasoning_content]
            .into_iter()
            .flatten()
        {
            slots.take(text, &mut texts);
        }
        for call in message.tool_calls.iter_mut().flatten() {
            slots.take_string(&mut call.function.arguments, &mut texts);
        }
    }
    JsonAnswer::with_texts(&folded, &slots, texts, text_bytes)
}

fn to_value(raw: &RawValue) -> Result<Value, FoldError> {
    serde_json::from_str(raw.get()).map_err(|e| FoldError::BadChunk(e.to_string()))
}

impl ChoiceAcc {
    /// A delta with a new index starts a call; one without index continues the latest (Groq).
    fn add_call(&mut self, delta: CallView<'_>) {
        let position = match delta.index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        let function = delta.function.unwrap_or_default();
        match position {
            Some(i) => {
                let call = &mut self.calls[i];
                if call.id.is_none() {
                    call.id = delta.id.map(Cow::into_owned);
                }
                if let Some(name) = function.name {
                    call.name.push_str(&name);
                }
                if let Some(args) = function.arguments {
                    call.arguments.push_str(&args);
                }
            }
            None => self.calls.push(CallAcc {
                index: delta.index,
                id: delta.id.map(Cow::into_owned),
                kind: delta.kind.map(Cow::into_owned),
                name: function.name.map(Cow::into_owned).unwrap_or_default(),
                arguments: function.arguments.map(Cow::into_owned).unwrap_or_default(),
            }),
        }
    }

    fn complete(self, index: u32) -> CompletionChoice {
        let tool_calls: Vec<CompletedToolCall> = self
            .calls
            .into_iter()
            .map(|c| CompletedToolCall {
                id: c
                    .id
                    .unwrap_or_else(|| format!("call_{}", c.name.replace('.', "_"))),
                kind: c.kind.unwrap_or_else(|| "function".into()),
                function: CompletedFunction {
                    name: c.name,
                    arguments: c.arguments,
                },
            })
            .collect();
        let has_calls = !tool_calls.is_empty();
        CompletionChoice {
            index,
            message: CompletionMessage {
                role: self.role.unwrap_or_else(|| "assistant".into()),
                // OpenAI sends `null` content beside tool calls and `""` for an empty answer.
                content: if has_calls {
                    self.content
                } else {
                    Some(self.content.unwrap_or_default())
                },
                reasoning_content: self.reasoning,
                tool_calls: has_calls.then_some(tool_calls),
            },
            finish_reason: self.finish_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(stream: &str) -> Result<Value, FoldError> {
        let mut folder = Folder::new();
        // Feed in awkward pieces to prove boundaries do not matter.
        for piece in stream.as_bytes().chunks(7) {
            folder.push(piece)?;
        }
        Ok(serde_json::to_value(folder.finish("fallback")?).expect("serializable"))
    }

    /// What a watcher was told, in order.
    #[derive(Clone, Default)]
    struct Told(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Told {
        fn note(&self, what: String) {
            self.0.lock().expect("lock").push(what);
        }
        fn all(&self) -> Vec<String> {
            self.0.lock().expect("lock").clone()
        }
    }

    impl AnswerWatcher for Told {
        fn text(&mut self, text: &str) {
            self.note(format!("text {text}"));
        }
        fn reasoning(&mut self, text: &str) {
            self.note(format!("reasoning {text}"));
        }
        fn signature(&mut self, signature: &str) {
            self.note(format!("signature {signature}"));
        }
        fn redacted(&mut self, data: &str) {
            self.note(format!("redacted {data}"));
        }
        fn call(&mut self, id: &str) {
            self.note(format!("call {id}"));
        }
        fn finished(&mut self) {
            self.note("finished".into());
        }
        fn failed(&mut self) {
            self.note("failed".into());
        }
        fn ended(&mut self) {
            self.note("ended".into());
        }
    }

    /// The folder's one parse of each event serves the proxy's memory too: its watcher hears
    /// the answer's (choice 0's) words, reasoning with what the server gave beside it, calls
    /// and finish, then the end; a stream cut short is a failure.
    #[test]
    fn the_watcher_is_told_what_the_answer_holds_and_how_it_ended() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Think\",\"reasoning_signature\":\"c2ln\",\"reasoning_redacted\":\"cmVk\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}},{\"index\":1,\"delta\":{\"content\":\"other\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let told = Told::default();
        let mut folder = Folder::new().watched(Box::new(told.clone()));
        folder.push(stream.as_bytes()).expect("folds");
        folder.finish("m").expect("whole");
        assert_eq!(
            told.all(),
            [
                "reasoning Think",
                "signature c2ln",
                "redacted cmVk",
                "text Hi",
                "call call_1",
                "finished",
                "ended"
            ]
        );

        let cut = Told::default();
        let mut folder = Folder::new().watched(Box::new(cut.clone()));
        folder
            .push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
            .expect("folds");
        assert_eq!(folder.finish("m").err(), Some(FoldError::Unfinished));
        assert_eq!(cut.all(), ["text Hi", "failed", "ended"]);
    }

    #[test]
    fn folds_text_finish_and_usage() {
        let stream = concat!(
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(
            fold(stream).expect("folds"),
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 7, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
            })
        );
    }

    #[test]
    fn assembles_tool_calls_by_index_and_without_index() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let folded = fold(stream).expect("folds");
        assert_eq!(
            folded["choices"][0],
            json!({
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                "finish_reason": "tool_calls"
            })
        );
        assert_eq!(folded["model"], "fallback");
    }

    #[test]
    fn missing_call_id_is_derived_from_the_name() {
        let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"ns.tool\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n";
        assert_eq!(
            fold(stream).expect("folds")["choices"][0]["message"]["tool_calls"][0]["id"],
            "call_ns_tool"
        );
    }

    #[test]
    fn reasoning_content_is_kept() {
        let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
        let folded = fold(stream).expect("folds");
        assert_eq!(
            folded["choices"][0]["message"]["reasoning_content"],
            "think"
        );
        assert_eq!(folded["choices"][0]["message"]["content"], "ok");
    }

    #[test]
    fn reasoning_under_openrouter_and_vllm_names_is_folded_as_reasoning_content() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"Need \",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"Need \"}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"ls.\"}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        let folded = fold(stream).expect("folds");
        assert_eq!(
            folded["choices"][0]["message"]["reasoning_content"],
            "Need ls."
        );
    }

    #[test]
    fn escaped_text_content_parts_fingerprint_and_null_usage() {
        let stream = concat!(
            "data: {\"id\":\"c\",\"system_fingerprint\":\"fp_1\",\"usage\":null,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"say \\\"hi\\\"\\n\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"system_fingerprint\":null,\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":null},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let folded = fold(stream).expect("folds");
        assert_eq!(folded["choices"][0]["message"]["content"], "say \"hi\"\nab");
        assert_eq!(folded["system_fingerprint"], "fp_1");
        assert!(folded.get("usage").is_none());
        assert_eq!(folded["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn errors_in_stream_and_bad_chunks_are_reported() {
        let err = fold("data: {\"error\":{\"message\":\"boom\"}}\n\n").expect_err("error event");
        assert_eq!(err, FoldError::Upstream(json!({"message": "boom"})));
        assert!(matches!(
            fold("data: {not json\n\n"),
            Err(FoldError::BadChunk(_))
        ));
    }

    /// Text chunks laid out alike and others among them (a role, a finish, reasoning, calls,
    /// usage, a key more, escapes, a broken one), in any order: folded with layouts learnt, the
    /// answer and what the watcher hears are those of folding with every event parsed.
    mod learnt_layouts {
        use super::*;
        use proptest::prelude::*;

        fn fold_all(stream: &str, every: bool) -> (Result<Value, String>, Vec<String>) {
            let told = Told::default();
            let mut folder = Folder::new().watched(Box::new(told.clone()));
            folder.parses_every_event = every;
            let folded = folder
                .push(stream.as_bytes())
                .map_err(|e| e.to_string())
                .and_then(|()| folder.finish("m").map_err(|e| e.to_string()))
                .map(|c| serde_json::to_value(c).expect("serializable"));
            (folded, told.all())
        }

        /// An upstream's text chunks alike but for their text: the first is parsed, the rest are
        /// folded by its layout; a chunk laid out otherwise is parsed and learnt in turn.
        #[test]
        fn text_chunks_laid_out_alike_are_folded_by_their_text() {
            let chunk = |text: &str, extra: &str| {
                format!(
                    "data: {{\"id\":\"c\",{extra}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
                )
            };
            let stream = [
                chunk("a", ""),
                chunk("b", ""),
                chunk("c\\n", ""),
                chunk("d", "\"x\":1,"),
                chunk("e", "\"x\":1,"),
                "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                    .to_owned(),
            ]
            .concat();
            let mut folder = Folder::new();
            folder.push(stream.as_bytes()).expect("folds");
            assert_eq!(folder.folded_by_layout, 3);
            let folded = serde_json::to_value(folder.finish("m").expect("whole")).expect("json");
            assert_eq!(folded["choices"][0]["message"]["content"], "abc\nde");
            assert_eq!(folded["choices"][0]["finish_reason"], "stop");
        }

        /// A call's pieces alike but for their arguments: folded by the learnt piece's layout.
        #[test]
        fn call_pieces_laid_out_alike_are_folded_by_their_arguments() {
            let stream = crate::protocols::chat::layout::a_call_in_pieces();
            let mut folder = Folder::new();
            folder.push(stream.as_bytes()).expect("folds");
            // ` -la` has no escape: learnt; ` src` and the last piece are folded by its layout.
            assert_eq!(folder.folded_by_layout, 2);
            let folded = serde_json::to_value(folder.finish("m").expect("whole")).expect("json");
            let call = &folded["choices"][0]["message"]["tool_calls"][0];
            assert_eq!(call["id"], "call_1");
            assert_eq!(call["function"]["name"], "bash");
            assert_eq!(
                call["function"]["arguments"],
                "{\"command\":\"ls -la src\"}"
            );
            assert_eq!(fold_all(&stream, false), fold_all(&stream, true));
        }

        proptest! {
            #[test]
            fn folding_by_learnt_layouts_is_folding_every_event(
                stream in crate::protocols::chat::layout::a_stream(),
            ) {
                let (learnt, told_learnt) = fold_all(&stream, false);
                let (every, told_every) = fold_all(&stream, true);
                // `created` falls back to the clock when no event names one.
                let strip = |v: Result<Value, String>| v.map(|mut v| { v["created"] = Value::Null; v });
                prop_assert_eq!(strip(learnt), strip(every));
                prop_assert_eq!(told_learnt, told_every);
            }
        }
    }
}
