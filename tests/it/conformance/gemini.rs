//! The Gemini API front as Gemini CLI speaks it (its `run_shell_command` tool), and as Google's
//! API answers it (docs/wire.md §5: `\r\n\r\n`-framed events, a failed stream's error as bare
//! JSON on a line of its own).

use serde_json::{Value, json};

use super::{Front, conformance_tests, events};
use crate::support::Recorded;

pub struct Gemini;

conformance_tests!(Gemini);

/// Google's status name (`google.rpc.Code`) for an HTTP status, as docs/wire.md §5 lists them.
fn status_name(status: u16) -> &'static str {
    match status {
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        408 | 504 => "DEADLINE_EXCEEDED",
        429 => "RESOURCE_EXHAUSTED",
        502 | 503 => "UNAVAILABLE",
        400..=499 => "INVALID_ARGUMENT",
        _ => "INTERNAL",
    }
}

/// A `GenerateContentResponse` of `parts`, finished or not.
fn answer(parts: &Value, finished: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"modelVersion": "m", "responseId": "r1"});
    if finished {
        candidate["finishReason"] = json!("STOP");
        response["usageMetadata"] =
            json!({"promptTokenCount": 9, "candidatesTokenCount": 2, "totalTokenCount": 11});
    }
    response["candidates"] = json!([candidate]);
    response
}

impl Front for Gemini {
    fn name(&self) -> &'static str {
        "Gemini"
    }

    fn path(&self, harness: &str, stream: bool) -> String {
        if stream {
            format!("/harness/{harness}/v1beta/models/m:streamGenerateContent?alt=sse")
        } else {
            format!("/harness/{harness}/v1beta/models/m:generateContent")
        }
    }

    fn headers(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("content-type", "application/json"),
            ("user-agent", "GeminiCLI/0.61.0/m (linux; x64)"),
            ("x-goog-api-key", "sk-test"),
        ]
    }

    fn shell(&self) -> (&'static str, Value) {
        ("run_shell_command", json!({"command": "echo hi"}))
    }

    /// The stream is the path's (`path`), never the body's.
    fn request(&self, _stream: bool, answered: Option<&Value>) -> Value {
        let (tool, _) = self.shell();
        let mut contents = vec![json!({"role": "user", "parts": [{"text": "say hi"}]})];
        if let Some(args) = answered {
            contents.push(
                json!({"role": "model", "parts": [{"functionCall": {"id": "call_1",
                "name": tool, "args": args}}]}),
            );
            contents.push(
                json!({"role": "user", "parts": [{"functionResponse": {"id": "call_1",
                "name": tool, "response": {"output": "hi\n"}}}]}),
            );
        }
        json!({"contents": contents, "tools": [{"functionDeclarations": [{"name": tool,
            "parametersJsonSchema": {"type": "object", "properties": {
                "command": {"type": "string"}, "description": {"type": "string"},
                "dir_path": {"type": "string"}}, "required": ["command"]}}]}]})
    }

    fn call(&self, answer: &Value) -> Option<(String, Value)> {
        let call = answer["candidates"][0]["content"]["parts"]
            .as_array()?
            .iter()
            .find_map(|p| p.get("functionCall"))?;
        Some((call["name"].as_str()?.to_owned(), call["args"].clone()))
    }

    /// The text parts of every event (thoughts aside); finished: a `finishReason`.
    fn stream_text(&self, body: &str) -> Result<(String, bool), String> {
        let mut text = String::new();
        let mut finished = false;
        for (_, data) in events(body) {
            let event: Value =
                serde_json::from_str(&data).map_err(|e| format!("event {data:.200}: {e}"))?;
            if event.get("error").is_some() {
                continue;
            }
            let candidate = &event["candidates"][0];
            for part in candidate["content"]["parts"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if part["thought"] != true {
                    text.push_str(part["text"].as_str().unwrap_or_default());
                }
            }
            finished |= candidate["finishReason"].is_string();
        }
        Ok((text, finished))
    }

    fn json_text(&self, answer: &Value) -> Option<String> {
        let parts = answer["candidates"][0]["content"]["parts"].as_array()?;
        Some(
            parts
                .iter()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| p["text"].as_str())
                .collect(),
        )
    }

    /// `{"error": {"code", "message", "status"}}`: the HTTP status and its name.
    fn error_message(&self, status: u16, body: &Value) -> Result<String, String> {
        let error = &body["error"];
        let shaped = error["code"] == status
            && error["status"] == status_name(status)
            && error["message"].is_string();
        if shaped {
            Ok(error["message"].as_str().unwrap_or_default().to_owned())
        } else {
            Err(format!("not Google's error shape for {status}: {body}"))
        }
    }

    /// The last line is the error object as bare JSON (not a `data:` event), which the SDK
    /// throws; its `status` names the cause.
    fn stream_error(&self, body: &str) -> Option<String> {
        let last = body.trim_end().rsplit('\n').next()?.trim();
        let error: Value = serde_json::from_str(last).ok()?;
        let error = &error["error"];
        let shaped = error["code"]
            .as_u64()
            .is_some_and(|c| (400..600).contains(&c))
            && error["message"].is_string();
        shaped.then(|| error["status"].as_str().map(str::to_owned))?
    }

    /// A cut stream is `UNAVAILABLE` (docs/wire.md §5), a silent one `DEADLINE_EXCEEDED`,
    /// anything else `INTERNAL`.
    fn error_kind(&self, code: &str) -> String {
        match code {
            "upstream_interrupted" => "UNAVAILABLE",
            "upstream_timeout" => "DEADLINE_EXCEEDED",
            _ => "INTERNAL",
        }
        .to_owned()
    }

    fn native_streams(&self, request: &Recorded) -> bool {
        request.path.contains(":streamGenerateContent")
    }

    fn native_stream(&self) -> Vec<String> {
        vec![
            format!(
                "data: {}\r\n\r\n",
                answer(&json!([{"text": "Hello"}]), false)
            ),
            format!(
                "data: {}\r\n\r\n",
                answer(&json!([{"text": " world"}]), true)
            ),
        ]
    }

    fn native_json(&self) -> String {
        answer(&json!([{"text": "Hello world"}]), true).to_string()
    }

    fn native_call(&self, tool: &str, args: &Value) -> String {
        answer(
            &json!([{"functionCall": {"name": tool, "args": args}}]),
            true,
        )
        .to_string()
    }

    fn native_error(&self, status: u16, message: &str) -> String {
        json!({"error": {"code": status, "message": message, "status": status_name(status)}})
            .to_string()
    }
}
