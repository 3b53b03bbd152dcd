//! The Anthropic Messages front as Claude Code speaks it (its `Bash` tool), and as Anthropic's
//! API answers it (its streaming and error documentation: named events, `error` mid-stream).

use serde_json::{Value, json};

use super::{Front, conformance_tests, events};
use crate::support::Recorded;

pub struct Messages;

conformance_tests!(Messages);

/// Anthropic's error type for an HTTP status (its errors documentation).
fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

impl Front for Messages {
    fn name(&self) -> &'static str {
        "Messages"
    }

    fn path(&self, harness: &str, _stream: bool) -> String {
        format!("/harness/{harness}/v1/messages")
    }

    fn headers(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("content-type", "application/json"),
            ("user-agent", "claude-cli/2.1.332 (external, sdk-cli)"),
            ("x-app", "cli"),
            ("anthropic-version", "2023-06-01"),
            ("x-api-key", "sk-test"),
        ]
    }

    fn shell(&self) -> (&'static str, Value) {
        ("Bash", json!({"command": "echo hi"}))
    }

    fn request(&self, stream: bool, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        let mut messages = vec![json!({"role": "user", "content": "say hi"})];
        if let Some(args) = answered {
            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use",
                "id": "toolu_1", "name": tool, "input": args}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": "hi\n"}]}));
        }
        json!({"model": "m", "max_tokens": 100, "stream": stream, "messages": messages,
            "tools": [{"name": tool, "input_schema": {"type": "object", "properties": {
                "command": {"type": "string"}, "timeout": {"type": "number"},
                "description": {"type": "string"}}, "required": ["command"],
                "additionalProperties": false}}]})
    }

    fn call(&self, answer: &Value) -> Option<(String, Value)> {
        let call = answer["content"]
            .as_array()?
            .iter()
            .find(|b| b["type"] == "tool_use")?;
        Some((call["name"].as_str()?.to_owned(), call["input"].clone()))
    }

    /// `content_block_delta` events' `text_delta`s; finished: `message_stop`.
    fn stream_text(&self, body: &str) -> Result<(String, bool), String> {
        let mut text = String::new();
        let mut stopped = false;
        for (name, data) in events(body) {
            let event: Value =
                serde_json::from_str(&data).map_err(|e| format!("event {data:.200}: {e}"))?;
            if name.as_deref() != event["type"].as_str() {
                return Err(format!("event {name:?} holds {data:.200}"));
            }
            match name.as_deref() {
                Some("content_block_delta") if event["delta"]["type"] == "text_delta" => {
                    text.push_str(event["delta"]["text"].as_str().unwrap_or_default());
                }
                Some("message_stop") => stopped = true,
                _ => {}
            }
        }
        Ok((text, stopped))
    }

    fn json_text(&self, answer: &Value) -> Option<String> {
        let text = answer["content"]
            .as_array()?
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        Some(text)
    }

    /// `{"type": "error", "error": {"type", "message"}}`, the type the status's.
    fn error_message(&self, status: u16, body: &Value) -> Result<String, String> {
        let shaped = body["type"] == "error"
            && body["error"]["type"] == error_type(status)
            && body["error"]["message"].is_string();
        if shaped {
            Ok(body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned())
        } else {
            Err(format!("not Anthropic's error shape for {status}: {body}"))
        }
    }

    /// The last event is `error`, `{"type": "error", "error": {"type", "message"}}`.
    fn stream_error(&self, body: &str) -> Option<String> {
        let (name, data) = events(body).pop()?;
        let event: Value = serde_json::from_str(&data).ok()?;
        let shaped = name.as_deref() == Some("error")
            && event["type"] == "error"
            && event["error"]["message"].is_string();
        shaped.then(|| event["error"]["type"].as_str().map(str::to_owned))?
    }

    /// A failed upstream is Anthropic's internal error, `api_error`, whatever the cause.
    fn error_kind(&self, _code: &str) -> String {
        "api_error".to_owned()
    }

    fn native_streams(&self, request: &Recorded) -> bool {
        serde_json::from_slice::<Value>(&request.body).is_ok_and(|b| b["stream"] == true)
    }

    fn native_stream(&self) -> Vec<String> {
        let event = |data: Value| {
            let name = data["type"].as_str().unwrap_or_default().to_owned();
            format!("event: {name}\ndata: {data}\n\n")
        };
        let delta = |text: &str| {
            event(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}))
        };
        vec![
            event(
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "m", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
            ),
            event(json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}})),
            delta("Hello"),
            delta(" world"),
            event(json!({"type": "content_block_stop", "index": 0})),
            event(
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                "stop_sequence": null}, "usage": {"output_tokens": 2}}),
            ),
            event(json!({"type": "message_stop"})),
        ]
    }

    fn native_json(&self) -> String {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "Hello world"}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 9, "output_tokens": 2}})
        .to_string()
    }

    fn native_call(&self, tool: &str, args: &Value) -> String {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": args}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 9, "output_tokens": 2}})
        .to_string()
    }

    fn native_error(&self, status: u16, message: &str) -> String {
        json!({"type": "error", "error": {"type": error_type(status), "message": message}})
            .to_string()
    }
}
