//! The conversation a Responses request parses into, checked on the model itself (the golden cases
//! check its plain Chat Completions rendering): call kinds, reasoning carried opaque, tools and
//! options. Expectations written by hand from the Responses wire format.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::{Stamp, parse_with};
use crate::conversation::{
    CallInput, ClientInfo, Content, Conversation, FreeformTool, FunctionTool, Item, Message,
    Reasoning, ResponseFormat, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};
use crate::harness::plain::chat_request;

fn parse(request: &Value, headers: &HeaderMap) -> (Conversation, Vec<String>) {
    let body = serde_json::to_vec(request).expect("JSON");
    let stamp = Stamp {
        id: "resp_t".into(),
        created_at: 1,
    };
    let inbound = parse_with(&body, headers, stamp).expect("parses");
    (inbound.conversation, inbound.dropped_tools)
}

fn items(input: &Value) -> Vec<Item> {
    parse(&json!({"model": "m", "input": input}), &HeaderMap::new())
        .0
        .items
}

fn call(id: &str, name: &str, input: CallInput) -> Item {
    Item::ToolCall(ToolCall {
        id: Some(id.into()),
        name: name.into(),
        input,
    })
}

#[test]
fn a_custom_tool_call_is_a_freeform_call_and_its_output_a_result() {
    let got = items(&json!([
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done."},
        {"type": "function_call", "call_id": "c2", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
        {"type": "function_call", "call_id": "c3", "name": "list"}
    ]));
    assert_eq!(
        got,
        [
            call(
                "c1",
                "apply_patch",
                CallInput::Freeform("*** Begin Patch\n*** End Patch".into())
            ),
            Item::ToolResult(ToolResult {
                call_id: Some("c1".into()),
                content: Content::Text("Done.".into()),
                is_error: false,
            }),
            call(
                "c2",
                "exec_command",
                CallInput::Arguments("{\"cmd\":\"ls\"}".into())
            ),
            // No arguments: an empty object.
            call("c3", "list", CallInput::Arguments("{}".into())),
        ]
    );
}

#[test]
fn a_reasoning_item_is_carried_whole_and_never_rendered() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA",
        "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}]});
    let request = json!({"model": "m", "input": [
        {"role": "user", "content": "hi"},
        reasoning,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}
    ]});
    let (conversation, _) = parse(&request, &HeaderMap::new());
    assert_eq!(
        conversation.items,
        [
            Item::Message(Message::text(Role::User, "hi")),
            Item::Reasoning(Reasoning {
                text: "First.\n\nSecond.".into(),
                opaque: Some(reasoning),
                sealed: Some("gAAAA".into()),
                signature: None,
                redacted: Vec::new(),
            }),
            Item::Message(Message::text(Role::Assistant, "Looking.")),
        ]
    );
    let rendered = serde_json::to_string(&chat_request(&conversation, true)).expect("JSON");
    for secret in ["First.", "Second.", "gAAAA", "rs_1"] {
        assert!(!rendered.contains(secret), "{secret} in {rendered}");
    }
}

#[test]
fn an_assistant_message_without_content_opens_the_turn_of_the_calls_after_it() {
    let got = items(&json!([
        {"type": "message", "role": "assistant"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "assistant"}
    ]));
    assert_eq!(
        got,
        [
            Item::Reasoning(Reasoning {
                text: String::new(),
                opaque: Some(json!({"type": "reasoning", "summary": []})),
                sealed: None,
                signature: None,
                redacted: Vec::new(),
            }),
            call("c1", "f", CallInput::Arguments("{}".into())),
            // Nothing follows: an empty answer.
            Item::Message(Message::text(Role::Assistant, "")),
        ]
    );
}

#[test]
fn the_leading_developer_message_is_the_system_prompt_unless_instructions_are_given() {
    let input = json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Base."}]},
        {"type": "message", "role": "developer", "content": "Later."}
    ]);
    assert_eq!(
        items(&input),
        [
            Item::Message(Message::text(Role::System, "Base.")),
            Item::Message(Message::text(Role::Developer, "Later.")),
        ]
    );
    let request = json!({"model": "m", "instructions": "Rules.", "input": input});
    assert_eq!(
        parse(&request, &HeaderMap::new()).0.items,
        [
            Item::Message(Message::text(Role::System, "Rules.")),
            Item::Message(Message::text(Role::Developer, "Base.")),
            Item::Message(Message::text(Role::Developer, "Later.")),
        ]
    );
}

#[test]
fn tools_keep_their_kind_and_namespaced_functions_their_names() {
    let request = json!({"model": "m", "input": "go", "tools": [
        {"type": "custom", "name": "apply_patch", "description": "Patch.", "format": {"type": "grammar", "syntax": "lark"}},
        {"type": "namespace", "name": "mcp__fs", "tools": [
            {"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": true}
        ]},
        {"type": "web_search"},
        {"type": "function", "name": "noop"}
    ]});
    let (conversation, dropped) = parse(&request, &HeaderMap::new());
    assert_eq!(
        conversation.tools,
        [
            ToolDefinition::Freeform(FreeformTool {
                name: "apply_patch".into(),
                description: Some("Patch.".into()),
                format: Some(json!({"type": "grammar", "syntax": "lark"})),
            }),
            ToolDefinition::Function(FunctionTool {
                name: "read".into(),
                description: None,
                parameters: Some(json!({"type": "object"})),
                strict: Some(true),
                ..FunctionTool::default()
            }),
            ToolDefinition::Function(FunctionTool {
                name: "noop".into(),
                description: None,
                parameters: Some(json!({"type": "object", "properties": {}})),
                strict: None,
                ..FunctionTool::default()
            }),
        ]
    );
    assert_eq!(dropped, ["web_search"]);
}

#[test]
fn options_tool_choice_format_and_the_conversation_key() {
    let request = json!({"model": "m", "input": "go", "stream": true, "temperature": 0.5,
        "top_p": 0.9, "max_output_tokens": 64, "reasoning": {"effort": "high", "summary": "auto"},
        "tool_choice": {"type": "custom", "name": "apply_patch"}, "parallel_tool_calls": false,
        "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
        "prompt_cache_key": "conv-1", "store": false});
    let mut headers = HeaderMap::new();
    headers.insert("originator", HeaderValue::from_static("codex_cli_rs"));
    let (conversation, _) = parse(&request, &headers);
    let options = &conversation.options;
    assert!(options.stream && options.include_usage);
    assert_eq!(
        (
            options.temperature,
            options.top_p,
            options.max_output_tokens
        ),
        (Some(0.5), Some(0.9), Some(64))
    );
    assert_eq!(options.reasoning_effort.as_deref(), Some("high"));
    assert_eq!(
        options.tool_choice,
        Some(ToolChoice::Tool("apply_patch".into()))
    );
    assert_eq!(options.parallel_tool_calls, Some(false));
    assert_eq!(
        options.response_format,
        Some(ResponseFormat::JsonSchema {
            name: "response".into(),
            schema: Some(json!({"type": "object"})),
            strict: None,
        })
    );
    assert_eq!(
        options.extra.get("prompt_cache_key"),
        Some(&json!("conv-1"))
    );
    assert_eq!(
        conversation.client,
        ClientInfo {
            profile: Some("codex-responses"),
            conversation_key: Some("conv-1".into()),
            aside: false,
        }
    );
}

#[test]
fn a_hosted_tool_choice_and_a_blank_cache_key_are_left_out() {
    let request = json!({"model": "m", "input": "go", "tool_choice": {"type": "web_search"},
        "text": {"format": {"type": "text"}}, "prompt_cache_key": " "});
    let (conversation, _) = parse(&request, &HeaderMap::new());
    assert_eq!(conversation.options.tool_choice, None);
    assert!(!conversation.options.extra.contains_key("tool_choice"));
    assert_eq!(conversation.options.response_format, None);
    assert!(!conversation.options.stream);
    assert_eq!(conversation.client, ClientInfo::default());
}
