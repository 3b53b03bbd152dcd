use super::*;

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// The stream cut into `size`-byte chunks, read through the translation; its data payloads.
async fn read(text: &str, size: usize, max_event: usize) -> (Vec<String>, Option<UpstreamError>) {
    let chunks: Vec<Result<Bytes, UpstreamError>> = text
        .as_bytes()
        .chunks(size)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut stream = answer(Box::pin(futures_util::stream::iter(chunks)), max_event);
    let (mut payloads, mut error) = (Vec::new(), None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => {
                let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
                for event in text.split("\n\n").filter(|e| !e.is_empty()) {
                    payloads.push(event.strip_prefix("data: ").expect("data").to_owned());
                }
            }
            Err(err) => error = Some(err),
        }
    }
    (payloads, error)
}

fn deltas(payloads: &[String]) -> Vec<Value> {
    payloads
        .iter()
        .filter(|p| *p != "[DONE]")
        .map(|p| serde_json::from_str::<Value>(p).expect("json"))
        .filter_map(|c| {
            c["choices"]
                .get(0)
                .map(|c| json!([c["delta"], c["finish_reason"]]))
        })
        .collect()
}

/// Anthropic's documented stream of a thinking block, a text and a tool use.
fn thinking_then_tool() -> String {
    sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need ls."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Listing."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": "}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"ls\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
        json!({"type": "message_stop"}),
    ])
}

#[tokio::test]
async fn every_block_kind_becomes_its_chat_delta_whatever_the_chunking() {
    let text = thinking_then_tool();
    for size in [1, 7, 64, text.len()] {
        let (payloads, error) = read(&text, size, 1 << 20).await;
        assert!(error.is_none(), "chunks of {size}");
        assert_eq!(
            deltas(&payloads),
            vec![
                json!([{"role": "assistant"}, null]),
                json!([{"reasoning_content": "Need ls."}, null]),
                json!([{"reasoning_signature": "EqQBsig"}, null]),
                json!([{"content": "Listing."}, null]),
                json!([{"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function",
                    "function": {"name": "Bash", "arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\": "}}]}, null]),
                json!([{"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]}, null]),
                json!([{}, "tool_calls"]),
            ],
            "chunks of {size}"
        );
        assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
        let usage: Value = serde_json::from_str(&payloads[payloads.len() - 2]).expect("json");
        assert_eq!(
            usage["usage"],
            json!({"prompt_tokens": 95, "completion_tokens": 42, "total_tokens": 137,
                "prompt_tokens_details": {"cached_tokens": 80}, "cache_creation_input_tokens": 5})
        );
        assert_eq!(usage["id"], "msg_1");
        assert_eq!(usage["model"], "claude-sonnet-4-5");
    }
}

#[tokio::test]
async fn stop_reasons_take_chat_s_names() {
    for (reason, finish) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
    ] {
        let text = sse(&[
            json!({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {"input_tokens": 1}}}),
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}}),
            json!({"type": "message_stop"}),
        ]);
        let (payloads, _) = read(&text, 5, 1 << 20).await;
        assert_eq!(
            deltas(&payloads).last(),
            Some(&json!([{}, finish])),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn an_error_event_is_the_stream_s_last_chunk_in_chat_s_shape() {
    let text = sse(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "never read"}}),
    ]);
    let (payloads, error) = read(&text, 9, 1 << 20).await;
    assert!(error.is_none());
    let last: Value = serde_json::from_str(payloads.last().expect("some")).expect("json");
    assert_eq!(
        last,
        json!({"error": {"message": "Overloaded", "type": "overloaded_error", "code": "overloaded_error"}})
    );
    assert!(!payloads.iter().any(|p| p.contains("never read")));
}

#[tokio::test]
async fn a_cut_stream_ends_without_a_finish_and_an_oversized_event_fails_bounded() {
    let text = thinking_then_tool();
    let cut = &text[..text.find("message_delta").expect("there")];
    let (payloads, error) = read(cut, 13, 1 << 20).await;
    assert!(error.is_none());
    assert!(deltas(&payloads).iter().all(|d| d[1].is_null()));
    assert!(!payloads.iter().any(|p| p == "[DONE]"));

    let (_, error) = read(&text, 64, 100).await;
    assert!(matches!(error, Some(UpstreamError::EventTooLarge(100))));
    let (_, error) = read("data: {not json\n\n", 4, 100).await;
    assert_eq!(error.map(|e| e.code()), Some("upstream_invalid_event"));
}

#[tokio::test]
async fn an_anthropic_error_body_takes_openai_s_shape_and_any_other_stays() {
    let body = |text: &'static str| -> BodyStream {
        Box::pin(futures_util::stream::iter([Ok(Bytes::from_static(
            text.as_bytes(),
        ))]))
    };
    let read = |stream: BodyStream| async move {
        let parts: Vec<_> = stream.collect().await;
        parts
            .into_iter()
            .map(|p| p.expect("ok"))
            .fold(Vec::new(), |mut all, p| {
                all.extend_from_slice(&p);
                all
            })
    };
    let anthropic =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let out: Value =
        serde_json::from_slice(&read(error_body(body(anthropic))).await).expect("json");
    assert_eq!(
        out,
        json!({"error": {"message": "Overloaded", "type": "overloaded_error", "param": null, "code": "overloaded_error"}})
    );
    assert_eq!(read(error_body(body("Bad Gateway"))).await, b"Bad Gateway");
}

/// Issue 34: a `redacted_thinking` block (its data whole at the start, no delta) crosses as
/// `reasoning_redacted` between the thinking and the call, in the server's order, and the
/// answer reader makes it an event of its own, after the signature and before the call.
#[tokio::test]
async fn redacted_thinking_crosses_in_its_place_and_becomes_its_own_answer_event() {
    use crate::conversation::answer::AnswerEvent;
    let text = sse(&[
        json!({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need ls."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EnCrYpTeD=="}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]);
    let (payloads, error) = read(&text, 11, 1 << 20).await;
    assert!(error.is_none());
    let found = deltas(&payloads);
    assert_eq!(
        found[3],
        json!([{"reasoning_redacted": "EnCrYpTeD=="}, null])
    );

    let mut reader = crate::protocols::chat::answer::ChatAnswerReader::new();
    let mut events = Vec::new();
    for payload in &payloads {
        reader.push(format!("data: {payload}\n\n").as_bytes(), &mut events);
    }
    assert_eq!(
        events[..4],
        [
            AnswerEvent::Reasoning("Need ls.".into()),
            AnswerEvent::ReasoningSignature("EqQBsig".into()),
            AnswerEvent::RedactedReasoning("EnCrYpTeD==".into()),
            AnswerEvent::ToolCallStart {
                index: 0,
                id: "toolu_1".into(),
                name: "Bash".into()
            },
        ]
    );
}
