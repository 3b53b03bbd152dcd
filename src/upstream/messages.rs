//! An Anthropic Messages upstream's answer read as the Chat Completions answer every reader of
//! the proxy already knows (`upstream.wire = "messages"`): its event stream (`message_start` …
//! `message_stop`) becomes Chat Completions chunks, and its error body OpenAI's error shape, so
//! the shaper, the folder, the renderers, the title service and the memo read one wire.
//!
//! What crosses: text, thinking (as `reasoning_content`, its signature as `reasoning_signature`
//! beside it), redacted thinking (each block's opaque `data` as `reasoning_redacted`: nothing to
//! show, but the server refuses the next turn's history without it), tool use (its partial JSON as the call's argument fragments), the stop reason, the
//! usage (cache reads counted in the prompt as OpenAI counts them, and named as OpenAI names
//! them), and an `error` event as the stream's error chunk. A stream that ends without
//! `message_delta`'s stop reason stays unfinished, which the readers call an interruption. Must
//! not: buffer an answer (one event at a time), or read a body the proxy forwards as it is.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};

use super::{BodyStream, UpstreamError};
use crate::sse::Decoder;

/// The most of an error body read to reshape it: error bodies are a few hundred bytes; a larger
/// one is cut (its message is at the front).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A Messages event stream read as a Chat Completions one.
pub fn answer(body: BodyStream, max_event: usize) -> BodyStream {
    Box::pin(Translate {
        body,
        decoder: Decoder::with_limit(max_event),
        state: State::default(),
        finished: false,
    })
}

/// A Messages error body (`{"type":"error","error":{"type","message"}}`) in OpenAI's shape, the
/// one every front reshapes from; any other body stays as it came.
pub fn error_body(body: BodyStream) -> BodyStream {
    Box::pin(futures_util::stream::once(async move {
        let mut body = body;
        let mut held = Vec::new();
        while let Some(chunk) = body.next().await {
            held.extend_from_slice(&chunk?);
            if held.len() >= MAX_ERROR_BODY {
                held.truncate(MAX_ERROR_BODY);
                break;
            }
        }
        Ok(Bytes::from(openai_error(&held).unwrap_or(held)))
    }))
}

fn openai_error(body: &[u8]) -> Option<Vec<u8>> {
    let parsed: Value = serde_json::from_slice(body).ok()?;
    let error = parsed.get("error").filter(|_| parsed["type"] == "error")?;
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("api_error");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let shaped = json!({"error": {"message": message, "type": kind, "param": null, "code": kind}});
    Some(shaped.to_string().into_bytes())
}

struct Translate {
    body: BodyStream,
    decoder: Decoder,
    state: State,
    /// `message_stop`, an `error` event or a failure was passed on: nothing more is read.
    finished: bool,
}

impl Stream for Translate {
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            match this.decoder.next_event() {
                Err(too_large) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(UpstreamError::EventTooLarge(too_large.limit))));
                }
                Ok(Some(event)) => {
                    let Some(data) = event.data else { continue };
                    match this.state.read(&data) {
                        Ok(Step::Out(out, end)) => {
                            this.finished = end;
                            return Poll::Ready(Some(Ok(out)));
                        }
                        Ok(Step::Nothing) => continue,
                        Err(err) => {
                            this.finished = true;
                            return Poll::Ready(Some(Err(err)));
                        }
                    }
                }
                Ok(None) => match this.body.poll_next_unpin(cx) {
                    Poll::Ready(Some(Ok(chunk))) => this.decoder.push(&chunk),
                    Poll::Ready(Some(Err(err))) => {
                        this.finished = true;
                        return Poll::Ready(Some(Err(err)));
                    }
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

/// What one event became: Chat Completions events (and whether the answer ended), or nothing.
enum Step {
    Out(Bytes, bool),
    Nothing,
}

/// What the answer said so far that later chunks repeat or need.
#[derive(Default)]
struct State {
    id: String,
    model: String,
    /// Anthropic's block index → the call's index among the answer's calls (Chat numbers calls
    /// from 0, Anthropic numbers every block).
    calls: Vec<(u64, usize)>,
    usage: Usage,
}

#[derive(Default)]
struct Usage {
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

impl State {
    fn read(&mut self, data: &[u8]) -> Result<Step, UpstreamError> {
        let event: Value = serde_json::from_slice(data).map_err(|e| {
            UpstreamError::InvalidEvent(format!("not an Anthropic Messages event: {e}"))
        })?;
        let out = match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => self.start(&event["message"]),
            "content_block_start" => self.block_start(&event),
            "content_block_delta" => self.block_delta(&event),
            "message_delta" => self.message_delta(&event),
            "message_stop" => {
                let usage = self.chunk_with(json!([]), Some(self.usage.openai()));
                return Ok(Step::Out(events(&[usage, "[DONE]".to_owned()]), true));
            }
            "error" => {
                let error = &event["error"];
                let kind = error["type"].as_str().unwrap_or("api_error");
                let message = error["message"].as_str().unwrap_or("the upstream failed");
                let chunk = json!({"error": {"message": message, "type": kind, "code": kind}});
                return Ok(Step::Out(events(&[chunk.to_string()]), true));
            }
            // `ping`, `content_block_stop` and whatever a later version adds say nothing a Chat
            // answer carries.
            _ => None,
        };
        Ok(out.map_or(Step::Nothing, |chunk| Step::Out(events(&[chunk]), false)))
    }

    fn start(&mut self, message: &Value) -> Option<String> {
        self.id = message["id"].as_str().unwrap_or("msg").to_owned();
        self.model = message["model"].as_str().unwrap_or("").to_owned();
        self.usage.take(&message["usage"]);
        Some(self.delta(json!({"role": "assistant"}), None))
    }

    fn block_start(&mut self, event: &Value) -> Option<String> {
        let block = &event["content_block"];
        match block["type"].as_str()? {
            "text" => nonempty(&block["text"]).map(|t| self.delta(json!({"content": t}), None)),
            "thinking" => nonempty(&block["thinking"])
                .map(|t| self.delta(json!({"reasoning_content": t}), None)),
            // Sent whole at the start; no delta follows.
            "redacted_thinking" => {
                nonempty(&block["data"]).map(|d| self.delta(json!({"reasoning_redacted": d}), None))
            }
            "tool_use" => {
                let index = self.calls.len();
                self.calls.push((event["index"].as_u64()?, index));
                // A server that sends the input whole at the start (no partial JSON follows).
                let arguments = match &block["input"] {
                    Value::Object(input) if !input.is_empty() => block["input"].to_string(),
                    _ => String::new(),
                };
                let call = json!({"index": index, "id": block["id"], "type": "function",
                    "function": {"name": block["name"], "arguments": arguments}});
                Some(self.delta(json!({"tool_calls": [call]}), None))
            }
            _ => None,
        }
    }

    fn block_delta(&self, event: &Value) -> Option<String> {
        let delta = &event["delta"];
        let out = match delta["type"].as_str()? {
            "text_delta" => json!({"content": delta["text"]}),
            "thinking_delta" => json!({"reasoning_content": delta["thinking"]}),
            "signature_delta" => json!({"reasoning_signature": delta["signature"]}),
            "input_json_delta" => {
                let block = event["index"].as_u64()?;
                let index = self.calls.iter().find(|(b, _)| *b == block)?.1;
                json!({"tool_calls": [{"index": index,
                    "function": {"arguments": delta["partial_json"]}}]})
            }
            _ => return None,
        };
        Some(self.delta(out, None))
    }

    fn message_delta(&mut self, event: &Value) -> Option<String> {
        self.usage.take(&event["usage"]);
        let reason = event["delta"]["stop_reason"].as_str()?;
        let finish = match reason {
            "max_tokens" | "model_context_window_exceeded" => "length",
            "tool_use" => "tool_calls",
            "refusal" => "content_filter",
            _ => "stop",
        };
        Some(self.delta(json!({}), Some(finish)))
    }

    fn delta(&self, delta: Value, finish: Option<&str>) -> String {
        let mut choice = json!({"index": 0});
        choice["delta"] = delta;
        choice["finish_reason"] = json!(finish);
        self.chunk_with(Value::Array(vec![choice]), None)
    }

    fn chunk_with(&self, choices: Value, usage: Option<Value>) -> String {
        let mut chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": 0,
            "model": self.model});
        chunk["choices"] = choices;
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        chunk.to_string()
    }
}

impl Usage {
    /// Anthropic states each count once (`message_start`, then `message_delta`'s running totals);
    /// a later count replaces an earlier one.
    fn take(&mut self, usage: &Value) {
        let read = |name: &str| usage.get(name).and_then(Value::as_u64);
        self.input = read("input_tokens").unwrap_or(self.input);
        self.cache_read = read("cache_read_input_tokens").unwrap_or(self.cache_read);
        self.cache_creation = read("cache_creation_input_tokens").unwrap_or(self.cache_creation);
        self.output = read("output_tokens").unwrap_or(self.output);
    }

    /// OpenAI counts cached tokens inside the prompt; Anthropic beside it.
    fn openai(&self) -> Value {
        let prompt = self.input + self.cache_read + self.cache_creation;
        json!({"prompt_tokens": prompt, "completion_tokens": self.output,
            "total_tokens": prompt + self.output,
            "prompt_tokens_details": {"cached_tokens": self.cache_read},
            "cache_creation_input_tokens": self.cache_creation})
    }
}

fn nonempty(text: &Value) -> Option<&str> {
    text.as_str().filter(|t| !t.is_empty())
}

fn events(payloads: &[String]) -> Bytes {
    let mut out = String::new();
    for payload in payloads {
        out.push_str("data: ");
        out.push_str(payload);
        out.push_str("\n\n");
    }
    Bytes::from(out)
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
