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
            cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
            reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerEvent {
    Text(String),
    /// Upstream `reasoning_content` (or `reasoning`) deltas.
    Reasoning(String),
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
