//! Golden cases for the Messages adapter both ways. Expected values are written by hand from the
//! Anthropic Messages API reference and the Claude Code facts of docs/wire.md §4 and
//! docs/agents.md.

use bytes::Bytes;
use http::HeaderMap;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::render::{MessagesRenderer, THINKING_SIGNATURE};
use crate::protocols::{AnswerEvent, ChatAnswerReader, FinishReason, Renderer, Usage};

fn chat_of(request: &Value) -> (Value, Vec<String>) {
    let inbound = super::parse(&Bytes::from(request.to_string()), &HeaderMap::new())
        .expect("a Messages request parses");
    assert_eq!(
        inbound.conversation.client.profile, None,
        "a protocol implies no profile"
    );
    let chat = crate::harness::plain::chat_request(&inbound.conversation, false);
    (
        serde_json::to_value(&chat).expect("chat request is JSON"),
        inbound.dropped_tools,
    )
}

#[test]
fn a_claude_code_turn_becomes_a_chat_request() {
    let request = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nCLAUDE.md says hi\n</system-reminder>"},
                {"type": "text", "text": "make a file", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": "Working directory: /w\nPlatform: linux"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should run bash", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Running."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "echo hi > f", "description": "x"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "(Bash completed with no output)", "is_error": false, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "thanks"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0"}}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/w/f"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}]}
            ]}
        ],
        "tools": [
            {"name": "Bash", "description": "Run a command", "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "temperature": 1,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 10000},
        "metadata": {"user_id": "{\"device_id\":\"d\",\"account_uuid\":\"\",\"session_id\":\"s-1\"}"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "a_field_from_the_future": {"x": 1}
    });
    let (chat, dropped) = chat_of(&request);
    assert_eq!(dropped, vec!["web_search".to_owned()]);
    assert_eq!(
        chat,
        json!({
            "model": "claude-sonnet-4-5",
            "messages": [
                {"role": "system", "content": "x-anthropic-billing-header: cc_version=2.1.197\n\nYou are Claude Code."},
                {"role": "user", "content": "<system-reminder>\nCLAUDE.md says hi\n</system-reminder>"},
                {"role": "user", "content": "make a file"},
                {"role": "system", "content": "Working directory: /w\nPlatform: linux"},
                {"role": "assistant", "content": "Running.", "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"echo hi > f\",\"description\":\"x\"}"}}
                ]},
                {"role": "tool", "content": "(Bash completed with no output)", "tool_call_id": "toolu_1"},
                {"role": "user", "content": [
                    {"type": "text", "text": "thanks"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0"}}
                ]},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "toolu_2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"/w/f\"}"}}
                ]},
                {"role": "tool", "content": "line one\nline two", "tool_call_id": "toolu_2"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "Bash", "description": "Run a command", "parameters": {
                "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}}],
            "tool_choice": "required",
            "temperature": 1.0,
            "top_p": 0.9,
            "max_tokens": 32000,
            "reasoning_effort": "medium",
            "parallel_tool_calls": false,
            "stop": ["END"]
        })
    );
}

#[test]
fn title_request_options_and_choices_translate() {
    // Claude Code's interactive title request: no tools, a JSON-schema output, an effort.
    let (chat, _) = chat_of(&json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Please write a title"}],
        "tools": [],
        "tool_choice": {"type": "tool", "name": "Bash"},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {
            "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}
    }));
    assert_eq!(chat["stream"], false, "stream absent means one JSON answer");
    assert!(chat.get("stream_options").is_none());
    assert!(chat.get("tools").is_none(), "an empty tool list sends none");
    assert!(
        chat.get("tool_choice").is_none(),
        "no tool_choice without tools: OpenAI refuses it"
    );
    assert_eq!(
        chat["reasoning_effort"], "high",
        "output_config.effort wins"
    );
    assert_eq!(
        chat["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": {
            "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}})
    );
    for (thinking, effort) in [
        (
            json!({"type": "enabled", "budget_tokens": 1024}),
            json!("low"),
        ),
        (
            json!({"type": "enabled", "budget_tokens": 31999}),
            json!("high"),
        ),
        (json!({"type": "adaptive"}), json!("medium")),
        (json!({"type": "disabled"}), Value::Null),
    ] {
        let (chat, _) = chat_of(&json!({"model": "m", "messages": [], "thinking": thinking}));
        assert_eq!(chat["reasoning_effort"], effort);
    }
}

#[test]
fn only_a_body_that_is_not_a_messages_request_is_refused() {
    let headers = HeaderMap::new();
    let bad = super::parse(&Bytes::from_static(b"{not json"), &headers).err();
    assert!(matches!(
        bad,
        Some(crate::error::ProxyError::InvalidJson { .. })
    ));
    let bad = super::parse(&Bytes::from_static(br#"{"model":"m"}"#), &headers).err();
    assert!(
        bad.is_some_and(|e| e.to_string().contains("messages")),
        "names the missing field"
    );
    // Unknown roles, block types and fields are skipped, not refused.
    let (chat, _) = chat_of(&json!({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "document", "source": {}}, {"type": "text", "text": "hi"}], "extra": 1}
    ]}));
    assert_eq!(chat["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[test]
fn session_id_comes_from_metadata_user_id() {
    let body = json!({"metadata": {"user_id": "{\"device_id\":\"d\",\"account_uuid\":\"a\",\"session_id\":\"3f2c\"}"}, "messages": []});
    assert_eq!(
        super::session_id(body.to_string().as_bytes()).as_deref(),
        Some("3f2c")
    );
    assert_eq!(
        super::session_id(br#"{"metadata":{"user_id":"plain-user"}}"#),
        None
    );
}

fn rendered(events: Vec<AnswerEvent>) -> String {
    let mut renderer = MessagesRenderer::new("msg_1".into(), "m".into());
    let mut out = Vec::new();
    renderer.start(&mut out);
    for event in events {
        renderer.event(event, &mut out);
    }
    out.iter().map(|b| String::from_utf8_lossy(b)).collect()
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn tool_answer() -> Vec<AnswerEvent> {
    vec![
        AnswerEvent::Reasoning("Need a file.".into()),
        AnswerEvent::Text("Creating it.".into()),
        AnswerEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "Bash".into(),
        },
        AnswerEvent::ToolCallArguments {
            index: 0,
            delta: "{\"command\":".into(),
        },
        AnswerEvent::ToolCallArguments {
            index: 0,
            delta: "\"echo hi\"}".into(),
        },
        AnswerEvent::ToolCallEnd { index: 0 },
        AnswerEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 120,
                output_tokens: 30,
                cached_input_tokens: 100,
                reasoning_tokens: 5,
            }),
        },
    ]
}

#[test]
fn a_tool_answer_streams_as_anthropic_events() {
    let message_start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}}});
    assert_eq!(
        rendered(tool_answer()),
        sse(&[
            ("message_start", message_start),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Need a file."}})
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": THINKING_SIGNATURE}})
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0})
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Creating it."}})
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1})
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {}}})
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":"}})
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"echo hi\"}"}})
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 2})
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 30}})
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ])
    );
}

#[test]
fn finish_reasons_and_errors_in_anthropic_words() {
    let text = |reason| {
        rendered(vec![
            AnswerEvent::Text("x".into()),
            AnswerEvent::Finish {
                reason,
                usage: None,
            },
        ])
    };
    assert!(text(FinishReason::Stop).contains(r#""stop_reason":"end_turn""#));
    assert!(text(FinishReason::Length).contains(r#""stop_reason":"max_tokens""#));
    // A cut stream: the open block is left as is and an `error` event ends the stream.
    let cut = rendered(vec![
        AnswerEvent::Text("Hel".into()),
        AnswerEvent::Error {
            message: "the upstream stream ended before the answer finished".into(),
            code: "upstream_interrupted".into(),
        },
    ]);
    assert!(cut.ends_with(&sse(&[(
        "error",
        json!({"type": "error", "error": {"type": "api_error", "message": "the upstream stream ended before the answer finished"}})
    )])));
    assert!(!cut.contains("message_stop"));
}

#[test]
fn a_call_without_arguments_still_gets_an_input() {
    let out = rendered(vec![
        AnswerEvent::ToolCallStart {
            index: 3,
            id: "c".into(),
            name: "Glob".into(),
        },
        AnswerEvent::ToolCallEnd { index: 3 },
        AnswerEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: None,
        },
    ]);
    assert!(out.contains(r#""delta":{"type":"input_json_delta","partial_json":"{}"}"#));
}

#[test]
fn a_whole_answer_is_one_message_json() {
    let mut renderer = Box::new(MessagesRenderer::new("msg_9".into(), "m".into()));
    let mut discard = Vec::new();
    renderer.start(&mut discard);
    for event in tool_answer() {
        renderer.event(event, &mut discard);
    }
    let json: Value =
        serde_json::from_slice(&renderer.into_json().expect("an answer").into_bytes())
            .expect("json");
    assert_eq!(
        json,
        json!({
            "id": "msg_9", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "thinking", "thinking": "Need a file.", "signature": THINKING_SIGNATURE},
                {"type": "text", "text": "Creating it."},
                {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "echo hi"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 30}
        })
    );
    let mut failed = Box::new(MessagesRenderer::new("msg_9".into(), "m".into()));
    failed.event(
        AnswerEvent::Error {
            message: "boom".into(),
            code: "upstream_error".into(),
        },
        &mut discard,
    );
    assert_eq!(
        failed.into_json().err().map(|f| f.to_string()),
        Some("boom".into())
    );
}

const CHAT_STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"Thinking \\u00e9\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sure — \"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done.\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
);

const MESSAGE_STOP: &str = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn render_pieces(pieces: &[&[u8]]) -> Vec<u8> {
    let mut reader = ChatAnswerReader::new();
    let mut renderer = MessagesRenderer::new("msg_p".into(), "m".into());
    let mut events = Vec::new();
    let mut out = Vec::new();
    renderer.start(&mut out);
    for piece in pieces {
        reader.push(piece, &mut events);
        for event in events.drain(..) {
            renderer.event(event, &mut out);
        }
    }
    reader.finish(&mut events);
    for event in events.drain(..) {
        renderer.event(event, &mut out);
    }
    out.concat()
}

proptest! {
    #[test]
    fn any_split_of_the_upstream_stream_renders_the_same(cuts in proptest::collection::vec(0..CHAT_STREAM.len(), 0..10)) {
        let bytes = CHAT_STREAM.as_bytes();
        let pieces = crate::protocols::split_at(bytes, cuts);
        let whole = render_pieces(&[bytes]);
        let ends = String::from_utf8_lossy(&whole).ends_with(MESSAGE_STOP);
        prop_assert!(ends, "the whole stream ends with message_stop");
        prop_assert_eq!(render_pieces(&pieces), whole);
    }
}

#[test]
fn with_a_key_the_streamed_signature_is_the_thinking_sealed() {
    use crate::conversation::seal::ReasoningSeal;
    let seal = std::sync::Arc::new(ReasoningSeal::from_secret("k"));
    let mut renderer = MessagesRenderer::new("msg_1".into(), "m".into());
    renderer.seal_reasoning(seal.clone());
    let mut out = Vec::new();
    renderer.start(&mut out);
    for event in tool_answer() {
        renderer.event(event, &mut out);
    }
    let text: String = out
        .iter()
        .map(|b| std::str::from_utf8(b).expect("utf8"))
        .collect();
    let signature = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).expect("JSON"))
        .find_map(|d| d["delta"]["signature"].as_str().map(str::to_owned))
        .expect("a signature_delta");
    assert_eq!(seal.open(&signature).as_deref(), Some("Need a file."));
}
