//! The Responses front as Codex CLI speaks it (its `exec_command` tool), and as a Responses
//! server answers it (OpenAI's API reference: `response.*` events, `error` mid-stream).

use serde_json::{Value, json};

use super::{Front, conformance_tests, events, openai_error, openai_error_message};
use crate::support::Recorded;

pub struct Responses;

conformance_tests!(Responses);

/// The response object of the native answers, `output` given.
fn response(status: &str, output: &Value) -> Value {
    json!({"id": "resp_1", "object": "response", "created_at": 1, "status": status, "model": "m",
        "output": output})
}

impl Front for Responses {
    fn name(&self) -> &'static str {
        "Responses"
    }

    fn path(&self, harness: &str, _stream: bool) -> String {
        format!("/harness/{harness}/v1/responses")
    }

    fn headers(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("content-type", "application/json"),
            ("user-agent", "codex_exec/0.171.0 (Linux)"),
            ("originator", "codex_exec"),
            ("authorization", "Bearer sk-test"),
        ]
    }

    fn shell(&self) -> (&'static str, Value) {
        ("exec_command", json!({"cmd": "echo hi"}))
    }

    fn request(&self, stream: bool, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        let mut input = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]}),
        ];
        if let Some(args) = answered {
            input.push(
                json!({"type": "function_call", "call_id": "call_1", "name": tool,
                "arguments": args.to_string()}),
            );
            input.push(json!({"type": "function_call_output", "call_id": "call_1",
                "output": "Process exited with code 0\nOutput:\nhi\n"}));
        }
        json!({"model": "m", "stream": stream, "input": input, "tools": [{"type": "function",
            "name": tool, "parameters": {"type": "object", "properties": {
                "cmd": {"type": "string"}, "workdir": {"type": "string"},
                "yield_time_ms": {"type": "number"}}, "required": ["cmd"]}}]})
    }

    fn call(&self, answer: &Value) -> Option<(String, Value)> {
        let call = answer["output"]
            .as_array()?
            .iter()
            .find(|i| i["type"] == "function_call")?;
        Some((
            call["name"].as_str()?.to_owned(),
            serde_json::from_str(call["arguments"].as_str()?).ok()?,
        ))
    }

    /// `response.output_text.delta` events; finished: `response.completed`.
    fn stream_text(&self, body: &str) -> Result<(String, bool), String> {
        let mut text = String::new();
        let mut completed = false;
        for (name, data) in events(body) {
            let event: Value =
                serde_json::from_str(&data).map_err(|e| format!("event {data:.200}: {e}"))?;
            match name.as_deref() {
                Some("response.output_text.delta") => {
                    text.push_str(event["delta"].as_str().unwrap_or_default());
                }
                Some("response.completed") => completed = true,
                _ => {}
            }
        }
        Ok((text, completed))
    }

    fn json_text(&self, answer: &Value) -> Option<String> {
        let message = answer["output"]
            .as_array()?
            .iter()
            .find(|i| i["type"] == "message")?;
        let text = message["content"]
            .as_array()?
            .iter()
            .filter(|c| c["type"] == "output_text")
            .filter_map(|c| c["text"].as_str())
            .collect();
        Some(text)
    }

    fn error_message(&self, _status: u16, body: &Value) -> Result<String, String> {
        openai_error_message(body)
    }

    /// The last event is `response.failed` (its `response.error.code`) or `error` (its `code`).
    fn stream_error(&self, body: &str) -> Option<String> {
        let (name, data) = events(body).pop()?;
        let event: Value = serde_json::from_str(&data).ok()?;
        let code = match name.as_deref()? {
            "response.failed" if event["type"] == "response.failed" => {
                &event["response"]["error"]["code"]
            }
            "error" if event["type"] == "error" && event["message"].is_string() => &event["code"],
            _ => return None,
        };
        Some(code.as_str()?.to_owned())
    }

    /// OpenAI's error carries the code itself.
    fn error_kind(&self, code: &str) -> String {
        code.to_owned()
    }

    fn native_streams(&self, request: &Recorded) -> bool {
        serde_json::from_slice::<Value>(&request.body).is_ok_and(|b| b["stream"] == true)
    }

    fn native_stream(&self) -> Vec<String> {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
        let delta = |n: u64, text: &str| {
            event(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "sequence_number": n,
                    "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
            )
        };
        vec![
            event(
                "response.created",
                json!({"type": "response.created", "sequence_number": 0,
                    "response": response("in_progress", &json!([]))}),
            ),
            delta(1, "Hello"),
            delta(2, " world"),
            event(
                "response.completed",
                json!({"type": "response.completed", "sequence_number": 3,
                    "response": serde_json::from_str::<Value>(&self.native_json()).unwrap_or_default()}),
            ),
        ]
    }

    fn native_json(&self) -> String {
        response(
            "completed",
            &json!([{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello world", "annotations": []}]}]),
        )
        .to_string()
    }

    fn native_call(&self, tool: &str, args: &Value) -> String {
        response(
            "completed",
            &json!([{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": tool,
                "arguments": args.to_string(), "status": "completed"}]),
        )
        .to_string()
    }

    fn native_error(&self, status: u16, message: &str) -> String {
        openai_error(status, message)
    }
}
