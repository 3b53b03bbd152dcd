//! The wires the suite reads and writes: a client's answer read (status, bytes, a stream's end,
//! an error in the front's shape), and the upstream's answers, in Chat Completions (a rewriting
//! harness's upstream) or the front's own protocol (`passthrough`'s).

use std::time::Duration;

use serde_json::{Value, json};

use super::bench::Wire;
use super::{Front, Kind, chat};
use crate::support::fake_upstream::Step;
use crate::support::sse::{DONE, text_chunk};
use crate::support::{Recorded, Reply};

pub(super) fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn expect_status(response: &reqwest::Response, status: u16) -> Result<(), String> {
    if response.status() == status {
        Ok(())
    } else {
        Err(format!("status {}, not {status}", response.status()))
    }
}

pub(super) fn same_bytes(got: &str, sent: &str) -> Result<(), String> {
    if got == sent {
        Ok(())
    } else {
        Err(format!(
            "not forwarded byte for byte:\n  got  {got:.400}\n  sent {sent:.400}"
        ))
    }
}

/// The rest of the body (bounded: a stuck stream fails its combination, named).
pub(super) async fn read_rest(response: reqwest::Response) -> Result<String, String> {
    match tokio::time::timeout(Duration::from_secs(10), response.bytes()).await {
        Ok(Ok(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(Err(err)) => Err(format!("the body broke off: {err}")),
        Err(_) => Err("the body did not end within 10 s".to_owned()),
    }
}

/// Reads the body until it holds `marker` (bounded: a stuck stream fails the test).
pub(super) async fn read_until(
    response: &mut reqwest::Response,
    marker: &str,
) -> Result<String, String> {
    let mut text = String::new();
    let read = async {
        while !text.contains(marker) {
            match response.chunk().await {
                Ok(Some(chunk)) => text.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(None) => return Err(format!("the body ended before {marker:?}: {text:.300}")),
                Err(err) => return Err(err.to_string()),
            }
        }
        Ok(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| format!("no {marker:?} within 10 s"))??;
    Ok(text)
}

/// What the client has read once the upstream's first event has reached it: that event itself
/// through `passthrough`, its text `Hel` otherwise.
pub(super) fn first_said(front: &dyn Front, kind: Kind) -> String {
    match kind {
        Kind::Passthrough => front.native_stream()[0].clone(),
        Kind::Rewrites { .. } | Kind::Text => "Hel".to_owned(),
    }
}

/// A stream that failed after its first event: it ended with one error in the front's shape
/// (the proxy's `code`, as the front names it) and not as a finished answer; through
/// `passthrough` what came before it is the upstream's first event, byte for byte.
pub(super) fn ends_with_error(
    front: &dyn Front,
    kind: Kind,
    text: &str,
    code: &str,
) -> Result<(), String> {
    let expected = front.error_kind(code);
    match front.stream_error(text) {
        Some(kind) if kind == expected => {}
        Some(kind) => return Err(format!("ended with {kind}, not {expected}: {text:.600}")),
        None => {
            return Err(format!(
                "no error in {}'s shape at the end: {text:.600}",
                front.name()
            ));
        }
    }
    match kind {
        Kind::Passthrough if !text.starts_with(&front.native_stream()[0]) => Err(format!(
            "the upstream's first event was not forwarded as it came: {text:.300}"
        )),
        Kind::Passthrough => Ok(()),
        Kind::Rewrites { .. } | Kind::Text => match front.stream_text(text) {
            Ok((_, true)) => Err(format!(
                "a failed stream ended as a finished one: {text:.600}"
            )),
            Ok((said, false)) if said == "Hel" => Ok(()),
            Ok((said, false)) => Err(format!("text {said:?} before the error")),
            Err(why) => Err(why),
        },
    }
}

/// An error answer of `expected` status in the front's shape.
pub(super) fn front_error(
    front: &dyn Front,
    expected: u16,
    status: u16,
    text: &str,
) -> Result<(), String> {
    if status != expected {
        return Err(format!("status {status}, not {expected}: {text:.300}"));
    }
    let body: Value =
        serde_json::from_str(text).map_err(|e| format!("{status} not JSON ({e}): {text:.300}"))?;
    front.error_message(status, &body).map(drop)
}

/// Splits an SSE text into its events: (event name, data), `\r\n` read as `\n`; a block with no
/// `data:` line (Gemini's bare error) is its own text as data.
pub(super) fn events(text: &str) -> Vec<(Option<String>, String)> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push(value.strip_prefix(' ').unwrap_or(value));
                }
            }
            if data.is_empty() {
                (name, block.trim().to_owned())
            } else {
                (name, data.join("\n"))
            }
        })
        .collect()
}

/// The harness's view of the upstream's second request: the call it made and the result it got.
pub(super) fn call_and_result(request: &Recorded) -> (Option<String>, Option<String>, String) {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()).cloned());
    let name = call
        .as_ref()
        .and_then(|c| c["function"]["name"].as_str().map(str::to_owned));
    let arguments = call
        .as_ref()
        .and_then(|c| c["function"]["arguments"].as_str().map(str::to_owned));
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    (name, arguments, result)
}

pub(super) fn json_reply(status: u16, body: &str) -> Reply {
    Reply::json(status, body)
}

/// "Hello world" as a Chat Completions server answers it.
pub(super) fn chat_text(streams: bool) -> Reply {
    native_text(&chat::Chat, streams)
}

/// One call of `tool` as a Chat Completions server makes it.
pub(super) fn chat_call(tool: &str, arguments: &str, streams: bool) -> Reply {
    let call = json!({"index": 0, "id": "call_up", "type": "function",
        "function": {"name": tool, "arguments": arguments}});
    if !streams {
        let mut call = call;
        call.as_object_mut().map(|c| c.remove("index"));
        return json_reply(
            200,
            &json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                    "tool_calls": [call]}, "finish_reason": "tool_calls"}]})
            .to_string(),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    Reply::sse(&[
        &chunk(json!({"tool_calls": [call]}), Value::Null),
        &chunk(json!({}), json!("tool_calls")),
        DONE,
    ])
}

/// "Hello world" in the front's own wire.
pub(super) fn native_text(front: &dyn Front, streams: bool) -> Reply {
    if streams {
        let events = front.native_stream();
        Reply::sse(&events.iter().map(String::as_str).collect::<Vec<_>>())
    } else {
        json_reply(200, &front.native_json())
    }
}

/// The first event of a streamed "Hello world", in the wire the request is answered in.
pub(super) fn first_event(front: &dyn Front, wire: Wire) -> Step {
    match wire {
        Wire::Chat => Step::Send(text_chunk("Hel").into_bytes()),
        Wire::Native => Step::Send(front.native_stream()[0].clone().into_bytes()),
    }
}

/// OpenAI's error body (Chat Completions, Responses).
pub(super) fn openai_error(status: u16, message: &str) -> String {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}}).to_string()
}

/// OpenAI's error shape (Chat Completions and Responses): `{"error": {"message", "type", "param",
/// "code"}}`.
pub(super) fn openai_error_message(body: &Value) -> Result<String, String> {
    let error = &body["error"];
    let shaped = error["message"].is_string()
        && error["type"].is_string()
        && error.get("param").is_some()
        && error.get("code").is_some();
    if shaped {
        Ok(error["message"].as_str().unwrap_or_default().to_owned())
    } else {
        Err(format!("not OpenAI's error shape: {body}"))
    }
}
