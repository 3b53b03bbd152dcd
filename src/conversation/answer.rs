//! The answer as a protocol-neutral stream of events: what the model said (text, reasoning, tool
//! calls) and how it ended. `protocols::chat::answer` reads them from the upstream's Chat
//! Completions stream; every client protocol renders them in its own shape.
//!
//! Order guaranteed to renderers: `Text`/`Reasoning`/tool-call events in upstream order; a tool
//! call's `ToolCallStart` comes before its `ToolCallArguments`, and every started call gets one
//! `ToolCallEnd` before `Finish`; exactly one terminal event (`Finish` or `Error`) ends the stream.

/// Why the model stopped, in Chat Completions terms (each protocol maps it to its own words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// Any other value the upstream sent, kept verbatim.
    Other(String),
}

impl FinishReason {
    pub fn parse(reason: &str) -> Self {
        match reason {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" | "function_call" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// Token counts as the upstream reported them (zeros when it did not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub reasoning_tokens: u64,
}

/// Where upstreams put the prompt tokens read from their cache, first found wins: OpenAI's (also
/// OpenRouter's, vLLM's, GLM's, Qwen's), DeepSeek's `prompt_cache_hit_tokens`, Moonshot's
/// `cached_tokens` beside the counts.
const CACHED_TOKENS: [&str; 3] = [
    "/prompt_tokens_details/cached_tokens",
    "/prompt_cache_hit_tokens",
    "/cached_tokens",
];

impl Usage {
    pub fn from_value(usage: &serde_json::Value) -> Self {
        let n = |pointer: &str| {
            usage
                .pointer(pointer)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        Self {
            input_tokens: n("/prompt_tokens"),
            output_tokens: n("/completion_tokens"),
            cached_input_tokens: Self::cached_tokens_of(usage).unwrap_or(0),
            reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
        }
    }

    /// The cached prompt tokens of an upstream's usage object, under whichever name it gave them;
    /// `None` when it gave none.
    pub fn cached_tokens_of(usage: &serde_json::Value) -> Option<u64> {
        CACHED_TOKENS
            .iter()
            .find_map(|pointer| usage.pointer(pointer).and_then(serde_json::Value::as_u64))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerEvent {
    Text(String),
    /// Upstream `reasoning_content` (or `reasoning`) deltas.
    Reasoning(String),
    /// The server's signature of the reasoning just sent (a Messages upstream's thinking block):
    /// sealed with it for the client, so it goes back to the server with the history.
    ReasoningSignature(String),
    /// One redacted thinking block's opaque data (a Messages upstream's `redacted_thinking`):
    /// nothing to show, sealed with the reasoning for the client, so that it goes back to the
    /// server, which refuses a history that lost it.
    RedactedReasoning(String),
    /// A tool call opens: `index` is the upstream's call index (unique within one answer).
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: u32,
        delta: String,
    },
    ToolCallEnd {
        index: u32,
    },
    /// The answer ended normally. `usage` is `None` when the upstream sent none.
    Finish {
        reason: FinishReason,
        usage: Option<Usage>,
    },
    /// The answer cannot complete (upstream error event, cut stream, unparsable chunk).
    Error {
        message: String,
        code: String,
    },
}

/// Who watches an answer while a reader reads it (what the proxy remembers of it:
/// `memory::answer_witness`). The reader that parses each upstream event anyway (the folder of a
/// non-streaming Chat client, the answer-event reader of every other protocol) tells it what the
/// event held, so no event is parsed twice for it. Every method has a do-nothing default.
pub trait AnswerWatcher: Send {
    /// Text of the answer, as the client gets it.
    fn text(&mut self, _text: &str) {}
    fn reasoning(&mut self, _text: &str) {}
    /// The server's signature of the reasoning just sent.
    fn signature(&mut self, _signature: &str) {}
    /// One redacted thinking block's data.
    fn redacted(&mut self, _data: &str) {}
    /// A tool call's id, once per call.
    fn call(&mut self, _id: &str) {}
    /// The answer says it is finished (a finish reason).
    fn finished(&mut self) {}
    /// The answer failed (an error event, a cut or unreadable stream).
    fn failed(&mut self) {}
    /// The answer's body ended; nothing more comes.
    fn ended(&mut self) {}
}

/// Tells `watcher` what one answer event holds.
pub fn watch(watcher: &mut dyn AnswerWatcher, event: &AnswerEvent) {
    match event {
        AnswerEvent::Text(text) => watcher.text(text),
        AnswerEvent::Reasoning(text) => watcher.reasoning(text),
        AnswerEvent::ReasoningSignature(signature) => watcher.signature(signature),
        AnswerEvent::RedactedReasoning(data) => watcher.redacted(data),
        AnswerEvent::ToolCallStart { id, .. } => watcher.call(id),
        AnswerEvent::ToolCallArguments { .. } | AnswerEvent::ToolCallEnd { .. } => {}
        AnswerEvent::Finish { .. } => {
            watcher.finished();
            watcher.ended();
        }
        AnswerEvent::Error { .. } => {
            watcher.failed();
            watcher.ended();
        }
    }
}

/// The key under which a call's arguments go to the client when they are not a JSON object (or
/// cannot be put in the client's dialect): the model's raw text, so the call still parses and
/// the agent's own validation shows the model its mistake (docs/wire.md).
pub const INVALID_ARGUMENTS_KEY: &str = "_invalid_arguments";

/// What a tool call's arguments become on their way to a client: always a JSON object's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deliverable<'a> {
    /// A JSON object already (or no arguments at all, sent as `{}`).
    Valid(std::borrow::Cow<'a, str>),
    /// Not a JSON object: the raw text under `INVALID_ARGUMENTS_KEY`.
    Flagged(String),
}

impl Deliverable<'_> {
    pub fn text(&self) -> &str {
        match self {
            Self::Valid(text) => text,
            Self::Flagged(text) => text,
        }
    }

    pub fn into_string(self) -> String {
        match self {
            Self::Valid(text) => text.into_owned(),
            Self::Flagged(text) => text,
        }
    }
}

/// `raw` as a client can parse it: a JSON object kept as it is, empty as `{}`, anything else
/// flagged under `INVALID_ARGUMENTS_KEY`.
pub fn deliverable(raw: &str) -> Deliverable<'_> {
    if raw.trim().is_empty() {
        return Deliverable::Valid("{}".into());
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(raw) {
        Ok(_) if raw.trim_start().starts_with('{') => Deliverable::Valid(raw.into()),
        _ => Deliverable::Flagged(flagged(raw)),
    }
}

/// `raw` under `INVALID_ARGUMENTS_KEY`, whatever it is.
pub fn flagged(raw: &str) -> String {
    serde_json::json!({ INVALID_ARGUMENTS_KEY: raw }).to_string()
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn cached_tokens_are_read_under_each_upstream_s_name() {
        let read = |usage: serde_json::Value| Usage::from_value(&usage).cached_input_tokens;
        let openai = serde_json::json!({"prompt_tokens": 90,
            "prompt_tokens_details": {"cached_tokens": 64}, "prompt_cache_hit_tokens": 1});
        assert_eq!(read(openai), 64);
        let deepseek = serde_json::json!({"prompt_tokens": 90, "prompt_cache_hit_tokens": 80,
            "prompt_cache_miss_tokens": 10});
        assert_eq!(read(deepseek), 80);
        assert_eq!(
            read(serde_json::json!({"prompt_tokens": 90, "cached_tokens": 70})),
            70
        );
        let none = serde_json::json!({"prompt_tokens": 90});
        assert_eq!(read(none.clone()), 0);
        assert_eq!(Usage::cached_tokens_of(&none), None);
    }
}

#[cfg(test)]
mod deliverable_tests {
    use super::*;

    #[test]
    fn only_a_json_object_goes_as_it_is() {
        assert_eq!(deliverable(r#"{"a":1}"#).text(), r#"{"a":1}"#);
        assert_eq!(deliverable("  ").text(), "{}");
        for raw in [
            "{\"command\": \"ls",
            "[1]",
            "\"x\"",
            "3",
            "not json",
            "{} {}",
        ] {
            let Deliverable::Flagged(text) = deliverable(raw) else {
                panic!("{raw} kept");
            };
            let value: serde_json::Value = serde_json::from_str(&text).expect("parses");
            assert_eq!(value[INVALID_ARGUMENTS_KEY], raw);
        }
    }
}
