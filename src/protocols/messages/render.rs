//! Answer events → Anthropic Messages: the SSE stream (`message_start`, per block
//! `content_block_start` → deltas → `content_block_stop`, `message_delta`, `message_stop`) or, for
//! a client that did not stream, the one `message` JSON.
//!
//! Claude Code silently loses a block that is never stopped, so every opened block is stopped
//! before the next one starts and before `message_delta`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::error::stream_error;
use super::request::BlockKind;
use crate::api::text::Text;
use crate::conversation::seal::ReasoningSeal;
use crate::protocols::json_body::Slots;
use crate::protocols::{
    AnswerEvent, AnswerFailed, FinishReason, JsonAnswer, NoJson, Renderer, Usage,
};

/// What a thinking block is signed with when the renderer has no seal key: the upstream's
/// reasoning carries no signature. With a key (`seal_reasoning`, always on the served path) the
/// signature is the block's text sealed (`conversation::seal`), so the reasoning comes back with
/// Claude Code's echo even when it shows and keeps no thinking text.
pub const THINKING_SIGNATURE: &str = "harness-proxy";

/// The block being streamed.
enum Open {
    Text,
    Thinking,
    Tool { index: u32, has_arguments: bool },
}

/// One finished (or growing) content block, for the JSON answer.
enum Whole {
    Text(Text),
    /// Its text, and what a Messages upstream gave beside it.
    Thinking(Text, Server),
    Tool {
        id: String,
        name: String,
        arguments: String,
    },
}

/// What a Messages upstream gave beside a thinking block's text, sealed with it: its signature
/// of the text, and its redacted thinking blocks' data (not shown: only that server reads them).
#[derive(Default)]
struct Server {
    signature: Option<String>,
    redacted: Vec<String>,
}

impl Whole {
    fn text_len(&self) -> usize {
        match self {
            Self::Text(text) | Self::Thinking(text, _) => text.len(),
            Self::Tool { arguments, .. } => arguments.len(),
        }
    }
}

pub struct MessagesRenderer {
    id: String,
    model: String,
    open: Option<Open>,
    /// Blocks started so far (the next block's index).
    blocks: usize,
    whole: Vec<Whole>,
    stop_reason: Option<&'static str>,
    usage: Usage,
    failed: Option<AnswerFailed>,
    seal: Option<Arc<ReasoningSeal>>,
    /// Only `into_json` will be read (`holding_whole`): the text and thinking deltas are not
    /// rendered, so the answer is held once.
    holding: bool,
}

impl MessagesRenderer {
    /// `id` is the message id (`msg_…`), `model` the model the client asked for.
    pub fn new(id: String, model: String) -> Self {
        Self {
            id,
            model,
            open: None,
            blocks: 0,
            whole: Vec::new(),
            stop_reason: None,
            usage: Usage::default(),
            failed: None,
            seal: None,
            holding: false,
        }
    }

    /// A thinking block's signature: its text sealed with what the server gave beside it, if
    /// anything, or the constant without a key.
    fn signature(seal: Option<&ReasoningSeal>, thinking: &str, server: &Server) -> String {
        seal.map_or_else(
            || THINKING_SIGNATURE.to_owned(),
            |s| s.seal_with_server(thinking, server.signature.as_deref(), &server.redacted),
        )
    }

    /// Opens a thinking block unless one is open.
    fn open_thinking(&mut self, out: &mut Vec<Bytes>) {
        if !matches!(self.open, Some(Open::Thinking)) {
            self.open(
                Open::Thinking,
                &json!({"type": BlockKind::Thinking.as_str(), "thinking": "", "signature": ""}),
                Whole::Thinking(Text::new(), Server::default()),
                out,
            );
        }
    }

    fn close(&mut self, out: &mut Vec<Bytes>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let index = self.blocks - 1;
        match open {
            Open::Thinking => {
                let none = Server::default();
                let (thinking, server) = match self.whole.last() {
                    Some(Whole::Thinking(thinking, server)) => (thinking.as_str(), server),
                    _ => (Default::default(), &none),
                };
                let signature = Self::signature(self.seal.as_deref(), &thinking, server);
                out.push(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": signature}}),
                ));
            }
            // A call without arguments still needs a parsable input.
            Open::Tool {
                has_arguments: false,
                ..
            } => {
                out.push(json_delta(index, "{}"));
                if let Some(Whole::Tool { arguments, .. }) = self.whole.last_mut() {
                    arguments.push_str("{}");
                }
            }
            Open::Text | Open::Tool { .. } => {}
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }

    fn open(&mut self, open: Open, block: &Value, whole: Whole, out: &mut Vec<Bytes>) {
        self.close(out);
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": self.blocks, "content_block": block}),
        ));
        self.blocks += 1;
        self.open = Some(open);
        self.whole.push(whole);
    }

    fn usage_json(&self) -> Value {
        json!({
            "input_tokens": self.usage.input_tokens.saturating_sub(self.usage.cached_input_tokens),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": self.usage.cached_input_tokens,
            "output_tokens": self.usage.output_tokens,
        })
    }
}

fn event(name: &str, data: &Value) -> Bytes {
    crate::sse::json_event(Some(name), data)
}

fn json_delta(index: usize, partial: &str) -> Bytes {
    block_delta(
        index,
        DeltaBody::InputJson {
            partial_json: partial,
        },
    )
}

/// A `content_block_delta` event's payload, in the order of the `json!` it replaces (`type`,
/// `index`, `delta` with its `type` first): the same bytes, without building two maps per delta.
#[derive(serde::Serialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    delta: DeltaBody<'a>,
}

#[derive(serde::Serialize)]
#[serde(tag = "type")]
enum DeltaBody<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

fn block_delta(index: usize, delta: DeltaBody<'_>) -> Bytes {
    let payload = BlockDelta {
        kind: "content_block_delta",
        index,
        delta,
    };
    crate::sse::typed_event("content_block_delta", &payload).unwrap_or_else(|_| {
        // Strings and a number always serialise; were it ever to fail, the generic path.
        let value = serde_json::to_value(&payload).unwrap_or(Value::Null);
        event("content_block_delta", &value)
    })
}

/// Chat Completions finish reasons in Anthropic's words.
pub fn stop_reason(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
        FinishReason::Stop | FinishReason::Other(_) => "end_turn",
    }
}

impl Renderer for MessagesRenderer {
    fn start(&mut self, out: &mut Vec<Bytes>) {
        out.push(event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }}),
        ));
    }

    fn event(&mut self, answer: AnswerEvent, out: &mut Vec<Bytes>) {
        match answer {
            AnswerEvent::Text(text) => {
                if !matches!(self.open, Some(Open::Text)) {
                    self.open(
                        Open::Text,
                        &json!({"type": BlockKind::Text.as_str(), "text": ""}),
                        Whole::Text(Text::new()),
                        out,
                    );
                }
                if !self.holding {
                    out.push(block_delta(
                        self.blocks - 1,
                        DeltaBody::Text { text: &text },
                    ));
                }
                if let Some(Whole::Text(whole)) = self.whole.last_mut() {
                    whole.push_str(&text);
                }
            }
            AnswerEvent::Reasoning(text) => {
                self.open_thinking(out);
                if !self.holding {
                    let delta = DeltaBody::Thinking { thinking: &text };
                    out.push(block_delta(self.blocks - 1, delta));
                }
                if let Some(Whole::Thinking(whole, _)) = self.whole.last_mut() {
                    whole.push_str(&text);
                }
            }
            // Kept for the block's seal; a signature with no text (the server's thinking not
            // shown) is a thinking block of its own, as Anthropic sends it.
            AnswerEvent::ReasoningSignature(signature) => {
                self.open_thinking(out);
                if let Some(Whole::Thinking(_, server)) = self.whole.last_mut() {
                    let held = server.signature.get_or_insert_with(String::new);
                    held.push_str(&signature);
                }
            }
            // Sealed with the thinking block (a block of its own when there is no thinking
            // before it): the client cannot read it, and gives it back with the seal.
            AnswerEvent::RedactedReasoning(data) => {
                self.open_thinking(out);
                if let Some(Whole::Thinking(_, server)) = self.whole.last_mut() {
                    server.redacted.push(data);
                }
            }
            AnswerEvent::ToolCallStart { index, id, name } => self.open(
                Open::Tool {
                    index,
                    has_arguments: false,
                },
                &json!({"type": BlockKind::ToolUse.as_str(), "id": id, "name": name, "input": {}}),
                Whole::Tool {
                    id,
                    name,
                    arguments: String::new(),
                },
                out,
            ),
            AnswerEvent::ToolCallArguments { index, delta } => {
                if let Some(Open::Tool {
                    index: open,
                    has_arguments,
                }) = self.open.as_mut()
                    && *open == index
                {
                    *has_arguments = true;
                    out.push(json_delta(self.blocks - 1, &delta));
                    if let Some(Whole::Tool { arguments, .. }) = self.whole.last_mut() {
                        arguments.push_str(&delta);
                    }
                }
            }
            AnswerEvent::ToolCallEnd { index } => {
                if matches!(self.open, Some(Open::Tool { index: open, .. }) if open == index) {
                    self.close(out);
                }
            }
            AnswerEvent::Finish { reason, usage } => {
                self.close(out);
                let stop = stop_reason(&reason);
                self.stop_reason = Some(stop);
                self.usage = usage.unwrap_or_default();
                out.push(event(
                    "message_delta",
                    &json!({"type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": null},
                        "usage": self.usage_json()}),
                ));
                out.push(event("message_stop", &json!({"type": "message_stop"})));
            }
            AnswerEvent::Error { message, code } => {
                out.push(Bytes::from(stream_error(&code, &message)));
                self.failed = Some(AnswerFailed { message, code });
            }
        }
    }

    fn seal_reasoning(&mut self, seal: Arc<ReasoningSeal>) {
        self.seal = Some(seal);
    }

    fn keepalive(&self) -> Option<Bytes> {
        Some(Bytes::from_static(
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n",
        ))
    }

    fn holding_whole(&mut self) {
        self.holding = true;
    }

    fn into_json(self: Box<Self>) -> Result<JsonAnswer, NoJson> {
        if let Some(failed) = self.failed {
            return Err(failed.into());
        }
        let usage = self.usage_json();
        let seal = self.seal;
        let text_bytes: usize = self.whole.iter().map(Whole::text_len).sum();
        let (slots, mut texts) = (Slots::new(), Vec::new());
        // The blocks are moved into the JSON, not copied, a long text taken out to be written
        // in pieces (`json_body`): the answer is held once.
        let content: Vec<Value> = self
            .whole
            .into_iter()
            .map(|whole| match whole {
                Whole::Text(text) => block([
                    ("type", BlockKind::Text.as_str().into()),
                    ("text", Value::String(slots.place(text, &mut texts))),
                ]),
                Whole::Thinking(thinking, server) => {
                    let signature = Self::signature(seal.as_deref(), &thinking.as_str(), &server);
                    block([
                        ("type", BlockKind::Thinking.as_str().into()),
                        ("thinking", Value::String(slots.place(thinking, &mut texts))),
                        ("signature", signature.into()),
                    ])
                }
                Whole::Tool {
                    id,
                    name,
                    arguments,
                } => json!({"type": BlockKind::ToolUse.as_str(), "id": id, "name": name,
                    "input": serde_json::from_str::<Value>(&arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}))}),
            })
            .collect();
        let body = block([
            ("id", self.id.into()),
            ("type", "message".into()),
            ("role", "assistant".into()),
            ("model", self.model.into()),
            ("content", Value::Array(content)),
            ("stop_reason", self.stop_reason.unwrap_or("end_turn").into()),
            ("stop_sequence", Value::Null),
            ("usage", usage),
        ]);
        Ok(JsonAnswer::of_placed(body, &slots, texts, text_bytes)?)
    }
}

/// A JSON object from its fields, each value moved in (`json!` would copy a `Value` it is given).
fn block<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_delta_is_byte_for_byte_the_json_it_replaces() {
        let text = "line\n\t\"quoted\" \\ é \u{1}";
        let cases = [
            (
                DeltaBody::Text { text },
                json!({"type": "text_delta", "text": text}),
            ),
            (
                DeltaBody::Thinking { thinking: text },
                json!({"type": "thinking_delta", "thinking": text}),
            ),
            (
                DeltaBody::InputJson { partial_json: text },
                json!({"type": "input_json_delta", "partial_json": text}),
            ),
        ];
        for (typed, delta) in cases {
            let generic = json!({"type": "content_block_delta", "index": 3, "delta": delta});
            assert_eq!(
                block_delta(3, typed),
                event("content_block_delta", &generic)
            );
        }
    }
}
