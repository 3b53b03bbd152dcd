//! The conversation model a Messages request becomes, checked on the model itself (the plain
//! rendering is checked in `tests.rs`). Expected values are hand-written from the Anthropic
//! Messages API reference.

use serde_json::{Value, json};

use crate::conversation::{
    CallInput, Content, Conversation, Item, Message, Reasoning, Role, ToolCall, ToolChoice,
    ToolResult,
};

fn model_of(request: &Value) -> Conversation {
    let request: super::MessagesRequest =
        serde_json::from_value(request.clone()).expect("a Messages request");
    request.into_conversation().conversation
}

fn turn() -> Value {
    json!({"model": "m", "messages": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "ls will do", "signature": "sig=="},
            {"type": "text", "text": "Listing."},
            {"type": "redacted_thinking", "data": "EncRyPt"},
            {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls"}}
        ]},
        {"role": "user", "content": [
            {"type": "text", "text": "here:"},
            {"type": "tool_result", "tool_use_id": "toolu_9", "is_error": true,
             "content": [{"type": "text", "text": "ls: denied"}]}
        ]}
    ]})
}

#[test]
fn a_turn_is_reasoning_text_calls_then_results() {
    let model = model_of(&turn());
    assert_eq!(
        model.items,
        vec![
            Item::Message(Message::text(Role::User, "list files")),
            Item::Reasoning(Reasoning {
                text: "ls will do".into(),
                opaque: Some(
                    json!({"type": "thinking", "thinking": "ls will do", "signature": "sig=="})
                ),
                sealed: Some("sig==".into()),
                signature: None,
                redacted: Vec::new(),
            }),
            Item::Reasoning(Reasoning {
                text: String::new(),
                opaque: Some(json!({"type": "redacted_thinking", "data": "EncRyPt"})),
                sealed: None,
                signature: None,
                redacted: vec!["EncRyPt".into()],
            }),
            Item::Message(Message::text(Role::Assistant, "Listing.")),
            Item::ToolCall(ToolCall {
                id: Some("toolu_9".into()),
                name: "Bash".into(),
                input: CallInput::Arguments(r#"{"command":"ls"}"#.into()),
            }),
            // The text before the result is flushed first: blocks keep their order.
            Item::Message(Message::text(Role::User, "here:")),
            Item::ToolResult(ToolResult {
                call_id: Some("toolu_9".into()),
                content: Content::Text("ls: denied".into()),
                is_error: true,
            }),
        ]
    );
}

#[test]
fn reasoning_is_carried_but_never_rendered() {
    let model = model_of(&turn());
    let chat = serde_json::to_value(crate::harness::plain::chat_request(&model, false))
        .expect("chat request is JSON");
    let text = chat.to_string();
    assert!(!text.contains("ls will do"), "{text}");
    assert!(!text.contains("EncRyPt"), "{text}");
    assert_eq!(
        chat["messages"][1],
        json!({"role": "assistant", "content": "Listing.", "tool_calls": [
            {"id": "toolu_9", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}
        ]})
    );
}

#[test]
fn a_result_is_an_error_only_when_marked() {
    let model = model_of(
        &json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "b", "content": "ok", "is_error": false},
            {"type": "tool_result", "tool_use_id": "c", "content": "boom", "is_error": true}
        ]}]}),
    );
    let errors: Vec<(Option<&str>, bool)> = model
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult(r) => Some((r.call_id.as_deref(), r.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        vec![(Some("a"), false), (Some("b"), false), (Some("c"), true)]
    );
}

#[test]
fn options_get_their_model_slots() {
    let model = model_of(&json!({
        "model": "m", "messages": [], "stream": true, "max_tokens": 100,
        "stop_sequences": ["END"],
        "tool_choice": {"type": "tool", "name": "Read", "disable_parallel_tool_use": false}
    }));
    let options = &model.options;
    assert!(options.stream && options.include_usage);
    assert_eq!(options.max_output_tokens, Some(100));
    assert_eq!(options.stop, vec!["END".to_owned()]);
    assert_eq!(options.tool_choice, Some(ToolChoice::Tool("Read".into())));
    assert_eq!(options.parallel_tool_calls, Some(true));
    assert!(options.extra.is_empty(), "nothing left without a slot");
}
