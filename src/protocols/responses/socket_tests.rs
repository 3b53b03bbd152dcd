//! The socket's wire part: messages read, the chain expanded and bounded, answers' ends and error
//! events, against OpenAI's WebSocket mode as Codex 0.171 uses it (docs/wire.md §4).

use serde_json::{Value, json};

use super::*;

fn create(message: &Value) -> Create {
    match read(&message.to_string()).expect("a good message") {
        Frame::Create(create) => create,
        Frame::Processed => panic!("not a response.create"),
    }
}

fn body(turn: &Turn) -> Value {
    serde_json::from_slice(&turn.body).expect("the body is JSON")
}

fn item(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn completed(id: &str, output: &[Value]) -> Vec<u8> {
    json!({"response": {"id": id, "object": "response", "status": "completed", "output": output},
        "type": "response.completed", "sequence_number": 9})
    .to_string()
    .into_bytes()
}

#[test]
fn a_create_becomes_a_streamed_request_body_with_every_other_field_as_sent() {
    let message = json!({"type": "response.create", "model": "m", "input": [item("hi")],
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
        "stream": false, "store": false, "client_metadata": {"x-codex-window-id": "w:0"}});
    let turn = Chain::new(1 << 20, 100)
        .expand(create(&message))
        .expect("expands");
    assert!(turn.generate);
    assert_eq!(turn.model, "m");
    let sent = body(&turn);
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["input"], json!([item("hi")]));
    assert_eq!(sent["tools"], message["tools"]);
    assert_eq!(sent["client_metadata"], message["client_metadata"]);
    assert_eq!(sent["store"], false);
    assert!(sent.get("type").is_none(), "{sent}");
    assert!(sent.get("generate").is_none(), "{sent}");
}

#[test]
fn a_text_input_is_one_user_message() {
    let turn = Chain::new(1 << 20, 100)
        .expand(create(
            &json!({"type": "response.create", "model": "m", "input": "hello"}),
        ))
        .expect("expands");
    assert_eq!(
        body(&turn)["input"],
        json!([{"type": "message", "role": "user", "content": "hello"}])
    );
}

#[test]
fn previous_response_id_continues_the_last_response_with_its_output() {
    let mut chain = Chain::new(1 << 20, 100);
    let first = chain
        .expand(create(
            &json!({"type": "response.create", "model": "m", "input": [item("run ls")]}),
        ))
        .expect("expands");
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "status": "completed"});
    let end = finished(&completed("resp_1", std::slice::from_ref(&call))).expect("an end");
    let kept = format!("{},{call}", item("run ls"));
    assert_eq!(chain.keep(first, end), Some(kept.len()));

    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "a b"});
    let next = chain
        .expand(create(&json!({"type": "response.create", "model": "m",
            "previous_response_id": "resp_1", "input": [output]})))
        .expect("the chain continues");
    assert_eq!(body(&next)["input"], json!([item("run ls"), call, output]));
    assert!(body(&next).get("previous_response_id").is_none());

    // Only the last response can be continued.
    let err = chain
        .expand(create(&json!({"type": "response.create", "model": "m",
            "previous_response_id": "resp_0", "input": []})))
        .expect_err("an unknown id");
    assert_eq!(err.code(), "previous_response_not_found");
    assert_eq!(err.status(), 400);
}

#[test]
fn a_warm_up_is_an_empty_response_that_can_be_continued() {
    let mut chain = Chain::new(1 << 20, 100);
    let warm = chain
        .expand(create(
            &json!({"type": "response.create", "model": "m", "generate": false,
            "input": [item("hi")]}),
        ))
        .expect("expands");
    assert!(!warm.generate);
    let stamp = Stamp {
        id: "resp_warm".into(),
        created_at: 1,
    };
    let events: Vec<Value> = prewarmed(&warm, stamp)
        .iter()
        .map(|event| {
            let text = std::str::from_utf8(event).expect("utf8");
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            serde_json::from_str(data).expect("JSON")
        })
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
    let last = &events[2]["response"];
    assert_eq!(
        (&last["id"], &last["model"]),
        (&json!("resp_warm"), &json!("m"))
    );
    assert_eq!(last["output"], json!([]));

    let end = finished(events[2].to_string().as_bytes()).expect("the warm-up's end");
    chain.keep(warm, end);
    // Codex's first real turn: the same input, so no new item.
    let next = chain
        .expand(create(&json!({"type": "response.create", "model": "m",
            "previous_response_id": "resp_warm", "input": []})))
        .expect("continues the warm-up");
    assert_eq!(body(&next)["input"], json!([item("hi")]));
}

#[test]
fn a_chain_over_its_bounds_is_forgotten() {
    for (max_bytes, max_items) in [(1 << 20, 2), (60, 100)] {
        let mut chain = Chain::new(max_bytes, max_items);
        let turn = chain
            .expand(create(&json!({"type": "response.create", "model": "m",
                "input": [item("one"), item("two")]})))
            .expect("expands");
        let end = finished(&completed("resp_1", &[item("three")])).expect("an end");
        assert_eq!(chain.keep(turn, end), None, "{max_bytes} {max_items}");
        let err = chain
            .expand(create(&json!({"type": "response.create", "model": "m",
                "previous_response_id": "resp_1", "input": []})))
            .expect_err("forgotten");
        assert_eq!(
            err.code(),
            "previous_response_not_found",
            "{max_bytes} {max_items}"
        );
    }
}

#[test]
fn messages_that_are_not_a_create_are_told_apart() {
    assert!(matches!(
        read(r#"{"type":"response.processed","response_id":"resp_1"}"#),
        Ok(Frame::Processed)
    ));
    for (message, code) in [
        ("not json", "invalid_json"),
        ("[1]", "invalid_json"),
        (r#"{"type":"response.cancel"}"#, "invalid_message_type"),
        (r#"{"model":"m"}"#, "invalid_message_type"),
        (r#"{"type":"response.create","input":7}"#, "invalid_request"),
        (
            r#"{"type":"response.create","generate":"no"}"#,
            "invalid_request",
        ),
    ] {
        let err = read(message).expect_err(message);
        assert_eq!(err.code(), code, "{message}: {err}");
    }
}

#[test]
fn only_a_completed_or_incomplete_response_ends_a_chain() {
    let end = finished(&completed("resp_1", &[item("x")])).expect("completed");
    assert_eq!(end.response_id, "resp_1");
    assert_eq!(end.output.len(), 1);
    let incomplete =
        json!({"type": "response.incomplete", "response": {"id": "resp_2", "output": []}});
    assert!(finished(incomplete.to_string().as_bytes()).is_some());
    for other in [
        json!({"type": "response.failed", "response": {"id": "resp_3", "output": []}}),
        json!({"type": "response.output_text.delta", "delta": "\"type\":\"response.completed\""}),
        json!({"type": "response.created", "response": {"id": "resp_4", "status": "in_progress"}}),
    ] {
        assert!(finished(other.to_string().as_bytes()).is_none(), "{other}");
    }
}

#[test]
fn error_answers_become_error_events_with_their_status() {
    let openai = br#"{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limited"}}"#;
    let event: Value = serde_json::from_str(&error_event(429, openai)).expect("JSON");
    assert_eq!(
        event,
        json!({"type": "error", "status": 429, "error": {"message": "slow down",
            "type": "rate_limit_error", "param": null, "code": "rate_limited"}})
    );
    let event: Value =
        serde_json::from_str(&error_event(502, b"<html>bad gateway</html>")).expect("JSON");
    assert_eq!(event["status"], 502);
    assert_eq!(event["error"]["type"], "server_error");
    assert_eq!(event["error"]["message"], "<html>bad gateway</html>");
}
