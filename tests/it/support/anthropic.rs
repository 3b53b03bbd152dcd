//! A recording fake **Anthropic** model server (`upstream.wire = "messages"`): the recording
//! `FakeUpstream` playing Anthropic's event stream (`message_start` … `message_stop`), thinking
//! blocks with signatures, redacted thinking, tool use as partial JSON, an `error` event, an overloaded 529.

use serde_json::{Value, json};

use super::fake_upstream::{FakeUpstream, Recorded, Reply, Step};

/// The signature the fake's thinking blocks carry.
pub const SIGNATURE: &str = "EqQBCkYIBxgCKkBfakeSignatureOfTheFakeAnthropicUpstream==";
/// The thinking text of the fake's first turn.
pub const THINKING: &str = "The user wants a file listing; Bash will do.";

/// The opaque data of the fake's redacted thinking blocks.
pub const REDACTED: &str = "EmwKAhgBEgyFakeRedactedThinkingOfTheFakeAnthropicUpstream==";

/// The server's root, as `upstream.base_url` names a Messages upstream (no `/v1`).
pub fn root(fake: &FakeUpstream) -> String {
    format!("http://{}", fake.addr)
}

/// One event as Anthropic frames it: `event:` named like its `type`.
pub fn event(data: &Value) -> String {
    let name = data["type"].as_str().unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}

fn start(id: &str) -> Value {
    json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 3,
            "cache_read_input_tokens": 40, "output_tokens": 1}}})
}

fn stop(reason: &str) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": 17}}),
        json!({"type": "message_stop"}),
    ]
}

fn stream(events: &[Value]) -> Reply {
    Reply::steps(
        events
            .iter()
            .map(|e| Step::Send(event(e).into_bytes()))
            .collect(),
    )
}

/// The events of a text block at `index`, its text in two deltas.
fn text_block(index: u64, text: &str) -> Vec<Value> {
    let (a, b) = text.split_at(text.len() / 2);
    vec![
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": a}}),
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": b}}),
        json!({"type": "content_block_stop", "index": index}),
    ]
}

/// A streamed text answer.
pub fn text(text: &str) -> Reply {
    let mut events = vec![start("msg_text"), json!({"type": "ping"})];
    events.extend(text_block(0, text));
    events.extend(stop("end_turn"));
    stream(&events)
}

/// Thinking with its signature, then one tool use whose input arrives as partial JSON in
/// three pieces.
pub fn thinking_then_tool(id: &str, name: &str, input: &Value) -> Reply {
    thinking_then_raw_tool(id, name, &input.to_string())
}

/// `thinking_then_tool` with the input's JSON text as given (broken, say).
pub fn thinking_then_raw_tool(id: &str, name: &str, json: &str) -> Reply {
    let cut = json.len() / 2;
    let mut events = vec![
        start("msg_tool"),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": THINKING}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    ];
    for piece in ["", &json[..cut], &json[cut..]] {
        events.push(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 1}));
    events.extend(stop("tool_use"));
    stream(&events)
}

/// `thinking_then_tool`'s thinking, then a `redacted_thinking` block (its data whole at the
/// start, as Anthropic sends it), then the tool use with its input whole.
pub fn redacted_then_tool(id: &str, name: &str, input: &Value) -> Reply {
    let mut events = vec![
        start("msg_redacted"),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": THINKING}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": REDACTED}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": id, "name": name, "input": input}}),
        json!({"type": "content_block_stop", "index": 2}),
    ];
    events.extend(stop("tool_use"));
    stream(&events)
}

/// Some text, then an `error` event mid-stream (Anthropic's overload).
pub fn error_mid_stream(text: &str) -> Reply {
    let mut events = vec![start("msg_err")];
    let mut block = text_block(0, text);
    block.pop();
    events.extend(block);
    events.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    stream(&events)
}

/// Anthropic's 529.
pub fn overloaded() -> Reply {
    Reply::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
}

/// Whether the request's last message carries a tool result.
pub fn answers_a_tool(request: &Recorded) -> bool {
    let body = request.json();
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}
