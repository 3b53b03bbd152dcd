//! Answer events → the Gemini API's answer: one `GenerateContentResponse` per SSE event
//! (`data: {…}\r\n\r\n`, no Chat `DONE` sentinel), or, for `:generateContent`, one
//! `GenerateContentResponse`.
//!
//! Text goes out as it streams; a function call is held until its arguments are complete and
//! goes as one whole `functionCall` part with its id (Gemini CLI reads calls whole); reasoning
//! goes as `thought: true` parts only when the client asked (`includeThoughts`); the last event
//! carries `finishReason` (`STOP` after tool calls too: the CLI reads the calls, not the reason)
//! and `usageMetadata`. A failure ends the stream with Google's error object (`error::stream_error`).
//!
//! Must not send a keep-alive: the SDK's parser anchors each event at `data: `, so an SSE comment
//! would stall it.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::error::stream_error;
use crate::api::text::Text;
use crate::conversation::answer::deliverable;
use crate::protocols::json_body::{Slots, string_bytes};
use crate::protocols::{
    AnswerEvent, AnswerFailed, FinishReason, JsonAnswer, NoJson, Renderer, Usage,
};

/// A streamed text part's event, in the order `response` builds it (`candidates` with the part,
/// `modelVersion`, `responseId`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct TextEvent<'a> {
    candidates: [TextCandidate<'a>; 1],
    model_version: &'a str,
    response_id: &'a str,
}

#[derive(serde::Serialize)]
struct TextCandidate<'a> {
    content: TextContent<'a>,
    index: u32,
}

#[derive(serde::Serialize)]
struct TextContent<'a> {
    role: &'static str,
    parts: [TextPart<'a>; 1],
}

#[derive(serde::Serialize)]
struct TextPart<'a> {
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
}

/// One part of the one JSON answer.
enum Held {
    /// A text (a thought when `thought` says so), joined with the text of its kind before it.
    Text { text: Text, thought: Option<bool> },
    /// A call, whole.
    Part(Value),
}

impl Held {
    /// The part as its JSON, a long text taken out to be written in pieces (`json_body`).
    fn into_json(self, slots: &Slots, texts: &mut Vec<Text>) -> Value {
        match self {
            Self::Text { text, thought } => {
                let mut part = Map::new();
                part.insert("text".into(), slots.place(text, texts).into());
                if let Some(thought) = thought {
                    part.insert("thought".into(), thought.into());
                }
                Value::Object(part)
            }
            Self::Part(part) => part,
        }
    }

    fn text_bytes(&self) -> usize {
        match self {
            Self::Text { text, .. } => text.len(),
            Self::Part(part) => string_bytes(part),
        }
    }
}

/// A call whose arguments are still arriving.
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
}

pub struct GeminiRenderer {
    model: String,
    response_id: String,
    include_thoughts: bool,
    calls: BTreeMap<u32, OpenCall>,
    /// Only `into_json` will be read: events fill `parts` and render nothing.
    holding: bool,
    /// The answer's parts, for the one JSON answer.
    parts: Vec<Held>,
    finish: Option<&'static str>,
    usage: Usage,
    failed: Option<AnswerFailed>,
}

impl GeminiRenderer {
    /// `model` is the model the path named; `response_id` names the answer.
    pub fn new(model: String, response_id: String, include_thoughts: bool) -> Self {
        Self {
            model,
            response_id,
            include_thoughts,
            calls: BTreeMap::new(),
            holding: false,
            parts: Vec::new(),
            finish: None,
            usage: Usage::default(),
            failed: None,
        }
    }

    /// One event holding `parts` (and, last, the finish and usage).
    /// The parts are moved in, never copied (`json!` would copy a `Value` it is given): a
    /// whole answer's text is held once.
    fn response(&self, parts: Vec<Value>, finish: Option<&str>) -> Value {
        let mut content = Map::new();
        content.insert("role".into(), "model".into());
        content.insert("parts".into(), Value::Array(parts));
        let mut candidate = Map::new();
        candidate.insert("content".into(), Value::Object(content));
        candidate.insert("index".into(), 0.into());
        let mut response = Map::new();
        if let Some(reason) = finish {
            candidate.insert("finishReason".into(), reason.into());
            response.insert("usageMetadata".into(), usage_metadata(&self.usage));
        }
        response.insert(
            "candidates".into(),
            Value::Array(vec![Value::Object(candidate)]),
        );
        response.insert("modelVersion".into(), self.model.clone().into());
        response.insert("responseId".into(), self.response_id.clone().into());
        Value::Object(response)
    }

    /// A text part (a thought when `thought` says so): streamed as the bytes `part` writes for
    /// it, without building the response's maps per delta.
    fn text(&mut self, text: &str, thought: Option<bool>, out: &mut Vec<Bytes>) {
        if self.holding {
            if let Some(Held::Text {
                text: whole,
                thought: kind,
            }) = self.parts.last_mut()
                && *kind == thought
            {
                whole.push_str(text);
            } else {
                let text = Text::from(text);
                self.parts.push(Held::Text { text, thought });
            }
            return;
        }
        let event = TextEvent {
            candidates: [TextCandidate {
                content: TextContent {
                    role: "model",
                    parts: [TextPart { text, thought }],
                },
                index: 0,
            }],
            model_version: &self.model,
            response_id: &self.response_id,
        };
        if let Ok(event) = crate::sse::typed_event_crlf(&event) {
            out.push(event);
            return;
        }
        let part = match thought {
            Some(thought) => json!({"text": text, "thought": thought}),
            None => json!({"text": text}),
        };
        self.part(part, out);
    }

    /// A part: streamed at once, or kept for the JSON answer.
    fn part(&mut self, part: Value, out: &mut Vec<Bytes>) {
        if self.holding {
            self.parts.push(Held::Part(part));
        } else {
            out.push(sse(&self.response(vec![part], None)));
        }
    }

    fn end_call(&mut self, index: u32, out: &mut Vec<Bytes>) {
        let Some(call) = self.calls.remove(&index) else {
            return;
        };
        let args: Value =
            serde_json::from_str(deliverable(&call.arguments).text()).unwrap_or_else(|_| json!({}));
        let signature = super::convert::signature_of(&call.id);
        let part = json!({"functionCall": {"id": call.id, "name": call.name, "args": args},
            "thoughtSignature": signature});
        self.part(part, out);
    }
}

fn sse(response: &Value) -> Bytes {
    crate::sse::json_event_crlf(response)
}

/// Chat Completions finish reasons in Gemini's words.
pub fn finish_reason(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
        FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other(_) => "STOP",
    }
}

/// Chat usage in Gemini's terms: `candidatesTokenCount` leaves the thoughts out (they have
/// their own count), as Gemini reports it.
pub fn usage_metadata(usage: &Usage) -> Value {
    json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens.saturating_sub(usage.reasoning_tokens),
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
        "thoughtsTokenCount": usage.reasoning_tokens,
        "cachedContentTokenCount": usage.cached_input_tokens,
    })
}

impl Renderer for GeminiRenderer {
    fn start(&mut self, _out: &mut Vec<Bytes>) {}

    fn event(&mut self, answer: AnswerEvent, out: &mut Vec<Bytes>) {
        match answer {
            AnswerEvent::Text(text) if !text.is_empty() => self.text(&text, None, out),
            AnswerEvent::Reasoning(text) if self.include_thoughts && !text.is_empty() => {
                self.text(&text, Some(true), out);
            }
            // Gemini's own thought signatures are the proxy's (`convert::signature_of`); a
            // Messages server's signature and redacted thinking have no place here (the
            // reasoning memo keeps them for the next turn).
            AnswerEvent::Text(_)
            | AnswerEvent::Reasoning(_)
            | AnswerEvent::ReasoningSignature(_)
            | AnswerEvent::RedactedReasoning(_) => {}
            AnswerEvent::ToolCallStart { index, id, name } => {
                self.calls.insert(
                    index,
                    OpenCall {
                        id,
                        name,
                        arguments: String::new(),
                    },
                );
            }
            AnswerEvent::ToolCallArguments { index, delta } => {
                if let Some(call) = self.calls.get_mut(&index) {
                    call.arguments.push_str(&delta);
                }
            }
            AnswerEvent::ToolCallEnd { index } => self.end_call(index, out),
            AnswerEvent::Finish { reason, usage } => {
                let open: Vec<u32> = self.calls.keys().copied().collect();
                for index in open {
                    self.end_call(index, out);
                }
                let reason = finish_reason(&reason);
                self.finish = Some(reason);
                self.usage = usage.unwrap_or_default();
                if !self.holding {
                    out.push(sse(&self.response(Vec::new(), Some(reason))));
                }
            }
            AnswerEvent::Error { message, code } => {
                out.push(Bytes::from(stream_error(&code, &message)));
                self.failed = Some(AnswerFailed { message, code });
            }
        }
    }

    fn holding_whole(&mut self) {
        self.holding = true;
    }

    fn into_json(self: Box<Self>) -> Result<JsonAnswer, NoJson> {
        let mut this = *self;
        if let Some(failed) = this.failed.take() {
            return Err(failed.into());
        }
        let text_bytes = this.parts.iter().map(Held::text_bytes).sum();
        let (slots, mut texts) = (Slots::new(), Vec::new());
        let parts = std::mem::take(&mut this.parts)
            .into_iter()
            .map(|part| part.into_json(&slots, &mut texts))
            .collect();
        let finish = this.finish.unwrap_or("STOP");
        let response = this.response(parts, Some(finish));
        Ok(JsonAnswer::of_placed(response, &slots, texts, text_bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_text_part_is_byte_for_byte_the_response_it_replaces() {
        let text = "line\n\t\"quoted\" \\ é \u{1}";
        for thought in [None, Some(true)] {
            let mut typed = GeminiRenderer::new("gemini-x".into(), "r-1".into(), true);
            let generic = GeminiRenderer::new("gemini-x".into(), "r-1".into(), true);
            let mut out = Vec::new();
            typed.text(text, thought, &mut out);
            let part = match thought {
                Some(t) => json!({"text": text, "thought": t}),
                None => json!({"text": text}),
            };
            assert_eq!(out, vec![sse(&generic.response(vec![part], None))]);
        }
    }
}
