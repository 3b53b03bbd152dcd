//! The Chat Completions front as opencode speaks it (its `bash` tool), and as a Chat Completions
//! server answers it (OpenAI's API reference).

use serde_json::{Value, json};

use super::{Front, conformance_tests, events, openai_error, openai_error_message};
use crate::support::Recorded;
use crate::support::sse::hello_stream;

pub struct Chat;

conformance_tests!(Chat);

impl Front for Chat {
    fn name(&self) -> &'static str {
        "Chat"
    }

    fn path(&self, harness: &str, _stream: bool) -> String {
        format!("/harness/{harness}/v1/chat/completions")
    }

    fn headers(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("content-type", "application/json"),
            ("user-agent", "opencode/1.18.33"),
            ("authorization", "Bearer sk-test"),
        ]
    }

    fn shell(&self) -> (&'static str, Value) {
        ("bash", json!({"command": "echo hi"}))
    }

    fn request(&self, stream: bool, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        let mut messages = vec![json!({"role": "user", "content": "say hi"})];
        if let Some(args) = answered {
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}),
            );
            messages.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "hi\n"}));
        }
        json!({"model": "m", "stream": stream, "messages": messages, "tools": [{"type": "function",
            "function": {"name": tool, "parameters": {"type": "object", "properties": {
                "command": {"type": "string"}, "timeout": {"type": "number"},
                "workdir": {"type": "string"}, "description": {"type": "string"}},
                "required": ["command"]}}}]})
    }

    fn call(&self, answer: &Value) -> Option<(String, Value)> {
        let call = &answer["choices"][0]["message"]["tool_calls"][0]["function"];
        Some((
            call["name"].as_str()?.to_owned(),
            serde_json::from_str(call["arguments"].as_str()?).ok()?,
        ))
    }

    /// `data:` chunks of `choices[0].delta.content`; finished: a `finish_reason`, then `[DONE]`.
    fn stream_text(&self, body: &str) -> Result<(String, bool), String> {
        let mut text = String::new();
        let (mut finished, mut done) = (false, false);
        for (_, data) in events(body) {
            if data == "[DONE]" {
                done = true;
                continue;
            }
            let chunk: Value =
                serde_json::from_str(&data).map_err(|e| format!("chunk {data:.200}: {e}"))?;
            if chunk.get("error").is_some() {
                continue;
            }
            for choice in chunk["choices"].as_array().into_iter().flatten() {
                text.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
                finished |= choice["finish_reason"].is_string();
            }
        }
        Ok((text, finished && done))
    }

    fn json_text(&self, answer: &Value) -> Option<String> {
        answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_owned)
    }

    fn error_message(&self, _status: u16, body: &Value) -> Result<String, String> {
        openai_error_message(body)
    }

    /// The last `data:` chunk is `{"error": {…, "code"}}`.
    fn stream_error(&self, body: &str) -> Option<String> {
        let (_, data) = events(body).pop()?;
        let last: Value = serde_json::from_str(&data).ok()?;
        Some(last["error"]["code"].as_str()?.to_owned())
    }

    /// OpenAI's error carries the code itself.
    fn error_kind(&self, code: &str) -> String {
        code.to_owned()
    }

    fn native_streams(&self, request: &Recorded) -> bool {
        serde_json::from_slice::<Value>(&request.body).is_ok_and(|b| b["stream"] == true)
    }

    fn native_stream(&self) -> Vec<String> {
        hello_stream()
    }

    fn native_json(&self) -> String {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}})
        .to_string()
    }

    fn native_call(&self, tool: &str, args: &Value) -> String {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": tool, "arguments": args.to_string()}}]},
                "finish_reason": "tool_calls"}]})
        .to_string()
    }

    fn native_error(&self, status: u16, message: &str) -> String {
        openai_error(status, message)
    }
}
