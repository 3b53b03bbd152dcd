//! The Gemini front's parse, credential and renderer, against values written from the Gemini
//! API's wire format (docs/wire.md §5).

use bytes::Bytes;
use http::{HeaderMap, Method};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::render::GeminiRenderer;
use crate::conversation::{
    CallInput, Content, Item, ResponseFormat, Role, ToolChoice, ToolDefinition,
};
use crate::protocols::{ChatAnswerReader, Inbound, Renderer, Request, split_at};

fn parse(action: &str, body: &Value) -> Inbound {
    parse_as(action, body, &HeaderMap::new())
}

fn parse_as(action: &str, body: &Value, headers: &HeaderMap) -> Inbound {
    let body = Bytes::from(body.to_string());
    let params = vec![
        ("model".to_owned(), "gemini-2.5-flash".to_owned()),
        ("action".to_owned(), action.to_owned()),
    ];
    let request = Request {
        method: &Method::POST,
        params: &params,
        query: Some("alt=sse"),
        headers,
        body: &body,
    };
    super::parse_with(&request, "resp_1".into()).expect("parses")
}

#[test]
fn a_cli_turn_with_calls_without_ids_matches_results_by_order_and_name() {
    let inbound = parse(
        super::STREAM,
        &json!({
            "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "list files"}]},
                {"role": "model", "parts": [
                    {"text": "thinking about it", "thought": true},
                    {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}},
                     "thoughtSignature": "skip_thought_signature_validator"},
                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
                    {"functionResponse": {"name": "run_shell_command", "response": {"error": "boom"}}}
                ]}
            ],
            "tools": [{"functionDeclarations": [
                {"name": "run_shell_command", "description": "Runs.",
                 "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}}},
                {"name": "read_file", "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}}}
            ]}, {"googleSearch": {}}],
            "generationConfig": {"temperature": 0.5, "topP": 1, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}},
            "someFutureField": {"x": 1}
        }),
    );
    let c = &inbound.conversation;
    assert_eq!(c.model, "gemini-2.5-flash");
    assert!(c.options.stream && !c.client.aside);
    assert_eq!(c.client.profile, None, "the protocol implies no profile");
    assert_eq!(c.options.reasoning_effort.as_deref(), Some("medium"));
    assert_eq!(inbound.dropped_tools, ["googleSearch"]);
    let ToolDefinition::Function(read) = &c.tools[1] else {
        panic!("a function");
    };
    assert_eq!(
        read.parameters,
        Some(json!({"type": "object", "properties": {"path": {"type": "string"}}}))
    );
    let ids: Vec<(String, String)> = c
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall(call) => Some(("call".into(), call.id.clone().unwrap_or_default())),
            Item::ToolResult(result) => {
                Some((result.text(), result.call_id.clone().unwrap_or_default()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("call".into(), "gemini_call_1_1".into()),
            ("call".into(), "gemini_call_1_2".into()),
            ("A".into(), "gemini_call_1_2".into()),
            ("boom".into(), "gemini_call_1_1".into()),
        ]
    );
    assert!(matches!(&c.items[0], Item::Message(m) if m.role == Role::System));
    assert!(matches!(&c.items[2], Item::Reasoning(r) if r.text == "thinking about it"));
    assert!(
        matches!(&c.items[3], Item::Message(m) if m.role == Role::Assistant && m.content.text().is_empty()),
        "the thought is never text"
    );
    assert!(matches!(&c.items[4], Item::ToolCall(call)
        if call.input == CallInput::Arguments(r#"{"command":"ls"}"#.into())));
}

#[test]
fn results_match_by_id_when_the_cli_sends_them() {
    let inbound = parse(
        super::STREAM,
        &json!({"contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "call_a", "name": "f", "args": {}}},
                {"functionCall": {"id": "call_b", "name": "f", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "call_b", "name": "f", "response": {"output": "b"}}},
                {"functionResponse": {"id": "call_a", "name": "f", "response": {"output": "a"}}},
                {"text": "and now?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}}
            ]}
        ]}),
    );
    let results: Vec<(String, String)> = inbound
        .conversation
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult(r) => Some((r.text(), r.call_id.clone().unwrap_or_default())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [("b".into(), "call_b".into()), ("a".into(), "call_a".into())]
    );
    let Some(Item::Message(last)) = inbound.conversation.items.last() else {
        panic!("a user message last");
    };
    let Content::Parts(parts) = &last.content else {
        panic!("text and image parts");
    };
    assert_eq!(parts.len(), 2);
    assert_eq!(inbound.conversation.image_bytes(), 6);
}

#[test]
fn a_json_generate_content_without_tools_is_a_helper_call() {
    let helper = json!({
        "contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
        "generationConfig": {"responseMimeType": "application/json",
            "responseJsonSchema": {"type": "object", "properties": {"next_speaker": {"type": "string"}}}}
    });
    let inbound = parse(super::GENERATE, &helper);
    assert!(inbound.conversation.client.aside);
    assert!(matches!(
        inbound.conversation.options.response_format,
        Some(ResponseFormat::JsonSchema { .. })
    ));
    // The same streamed is a turn; a plain-text generateContent is a turn too.
    assert!(!parse(super::STREAM, &helper).conversation.client.aside);
    let plain = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    assert!(!parse(super::GENERATE, &plain).conversation.client.aside);
    // Gemini CLI streams its turns: its plain-text session summary is a helper too.
    let mut cli = HeaderMap::new();
    cli.insert(
        http::header::USER_AGENT,
        http::HeaderValue::from_static(
            "GeminiCLI-tui/0.61.0/gemini-3.5-flash-lite (linux; x64; terminal)",
        ),
    );
    assert!(
        parse_as(super::GENERATE, &plain, &cli)
            .conversation
            .client
            .aside
    );
    assert!(
        !parse_as(super::STREAM, &plain, &cli)
            .conversation
            .client
            .aside
    );
}

#[test]
fn function_calling_config_becomes_tool_choice() {
    let choice = |config: Value| {
        parse(
            super::STREAM,
            &json!({"contents": [], "toolConfig": {"functionCallingConfig": config}}),
        )
        .conversation
        .options
        .tool_choice
    };
    assert_eq!(choice(json!({"mode": "AUTO"})), Some(ToolChoice::Auto));
    assert_eq!(choice(json!({"mode": "NONE"})), Some(ToolChoice::None));
    assert_eq!(choice(json!({"mode": "ANY"})), Some(ToolChoice::Required));
    assert_eq!(
        choice(json!({"mode": "ANY", "allowedFunctionNames": ["f"]})),
        Some(ToolChoice::Tool("f".into()))
    );
}

#[test]
fn unknown_fields_are_never_a_400_and_broken_json_is() {
    let odd = parse(
        super::STREAM,
        &json!({"contents": [{"parts": [{"text": "x", "videoMetadata": {}}]}],
        "safetySettings": [{"category": "X"}], "cachedContent": "c", "labels": {}}),
    );
    assert_eq!(odd.conversation.items.len(), 1);
    let body = Bytes::from_static(b"{not json");
    let request = Request {
        method: &Method::POST,
        params: &[],
        query: None,
        headers: &HeaderMap::new(),
        body: &body,
    };
    let err = super::parse(&request).err().expect("an error");
    assert_eq!(err.status().as_u16(), 400);
}

#[test]
fn the_key_in_the_query_becomes_the_proxys_header_and_leaves_the_uri() {
    let (mut parts, ()) = http::Request::builder()
        .uri("/v1beta/models/m:streamGenerateContent?alt=sse&key=s%2Fecret")
        .body(())
        .expect("request")
        .into_parts();
    super::adopt(&mut parts);
    assert_eq!(
        parts.uri.to_string(),
        "/v1beta/models/m:streamGenerateContent?alt=sse"
    );
    assert_eq!(parts.headers["x-api-key"], "s/ecret");
    assert!(parts.headers["x-api-key"].is_sensitive());
    let (mut parts, ()) = http::Request::builder()
        .uri("/v1beta/models/m:generateContent?key=q")
        .header(super::KEY_HEADER, "h")
        .body(())
        .expect("request")
        .into_parts();
    super::adopt(&mut parts);
    assert_eq!(parts.uri.to_string(), "/v1beta/models/m:generateContent");
    assert_eq!(parts.headers["x-api-key"], "h", "the header wins");
    assert!(!parts.headers.contains_key(super::KEY_HEADER));
}

#[test]
fn count_tokens_estimates_contents_and_a_wrapped_request() {
    let plain = br#"{"contents":[{"role":"user","parts":[{"text":"hello world"}]}]}"#;
    let n = super::count_tokens(plain).expect("counts");
    assert!(n > 4 && n < 20, "{n}");
    let wrapped = br#"{"generateContentRequest":{"model":"models/m","contents":[{"role":"user","parts":[{"text":"hello world"}]}]}}"#;
    assert_eq!(super::count_tokens(wrapped).expect("counts"), n);
}

const CHAT_STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"run_shell_command\",\"arguments\":\"{\\\"comm\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"and\\\":\\\"ls\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":7,\"completion_tokens_details\":{\"reasoning_tokens\":2},\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n",
    "data: [DONE]\n\n",
);

fn render(pieces: &[&[u8]], include_thoughts: bool) -> Vec<u8> {
    let mut renderer = GeminiRenderer::new("m".into(), "resp_1".into(), include_thoughts);
    let mut reader = ChatAnswerReader::new();
    let (mut events, mut out) = (Vec::new(), Vec::new());
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

fn data_events(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(text.ends_with("\r\n\r\n"));
    text.split("\r\n\r\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").expect("data line")).expect("JSON"))
        .collect()
}

#[test]
fn a_tool_turn_streams_text_then_one_whole_call_then_stop_with_usage() {
    let events = data_events(&render(&[CHAT_STREAM.as_bytes()], false));
    let parts: Vec<&Value> = events
        .iter()
        .map(|e| &e["candidates"][0]["content"]["parts"])
        .collect();
    assert_eq!(parts[0], &json!([{"text": "Hel"}]));
    assert_eq!(parts[1], &json!([{"text": "lo"}]));
    assert_eq!(
        parts[2],
        &json!([{"functionCall": {"id": "call_1", "name": "run_shell_command", "args": {"command": "ls"}},
                 "thoughtSignature": "aHBjYWxsMS5jYWxsXzE="}])
    );
    let last = events.last().expect("a last event");
    assert_eq!(events.len(), 4, "no thought without includeThoughts");
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 17,
               "thoughtsTokenCount": 2, "cachedContentTokenCount": 4})
    );
    assert_eq!(last["responseId"], "resp_1");
    let with_thoughts = data_events(&render(&[CHAT_STREAM.as_bytes()], true));
    assert_eq!(
        with_thoughts[0]["candidates"][0]["content"]["parts"],
        json!([{"text": "hmm", "thought": true}])
    );
}

#[test]
fn a_cut_stream_ends_with_googles_error_object_not_an_event() {
    let cut = &CHAT_STREAM.as_bytes()[..CHAT_STREAM
        .find("data: {\"choices\":[{\"index\":0,\"delta\":{},")
        .expect("finish")];
    let out = String::from_utf8(render(&[cut], false)).expect("UTF-8");
    let last = out.trim_end().rsplit('\n').next().expect("a line");
    let error: Value = serde_json::from_str(last).expect("bare JSON");
    assert_eq!(error["error"]["code"], 503);
    assert_eq!(error["error"]["status"], "UNAVAILABLE");
}

#[test]
fn the_whole_answer_is_one_generate_content_response() {
    let mut renderer = Box::new(GeminiRenderer::new("m".into(), "resp_1".into(), false));
    renderer.holding_whole();
    let mut reader = ChatAnswerReader::new();
    let (mut events, mut out) = (Vec::new(), Vec::new());
    reader.push(CHAT_STREAM.as_bytes(), &mut events);
    reader.finish(&mut events);
    for event in events {
        renderer.event(event, &mut out);
    }
    assert!(out.is_empty(), "nothing rendered while held whole");
    let json: Value =
        serde_json::from_slice(&renderer.into_json().expect("an answer").into_bytes())
            .expect("JSON");
    assert_eq!(
        json["candidates"][0]["content"]["parts"],
        json!([{"text": "Hello"},
               {"functionCall": {"id": "call_1", "name": "run_shell_command", "args": {"command": "ls"}},
                "thoughtSignature": "aHBjYWxsMS5jYWxsXzE="}])
    );
    assert_eq!(json["candidates"][0]["finishReason"], "STOP");
    assert_eq!(json["usageMetadata"]["totalTokenCount"], 17);
}

proptest! {
    /// However the upstream's bytes are cut, the client gets the same bytes.
    #[test]
    fn rendering_is_split_invariant(cuts in proptest::collection::vec(0..CHAT_STREAM.len(), 0..12)) {
        let whole = render(&[CHAT_STREAM.as_bytes()], true);
        let pieces = split_at(CHAT_STREAM.as_bytes(), cuts);
        prop_assert_eq!(render(&pieces, true), whole);
    }
}

/// pi's Google client drops `functionCall.id` from its history but keeps the part's
/// `thoughtSignature`, where the renderer put the id: the call keeps the upstream's id.
#[test]
fn a_call_echoed_without_its_id_keeps_the_id_its_signature_carries() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "list the files"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {"command": "ls"}},
            "thoughtSignature": "aHBjYWxsMS5jYWxsX3Vwc3RyZWFtXzc="}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"output": "a.txt"}}}]}
    ]});
    let conversation = parse(super::STREAM, &body).conversation;
    let ids: Vec<Option<&str>> = conversation
        .items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall(call) => Some(call.id.as_deref()),
            Item::ToolResult(result) => Some(result.call_id.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, [Some("call_upstream_7"), Some("call_upstream_7")]);
    // Another signature (Gemini's own, the CLI's placeholder) is not an id.
    let mut other = body;
    other["contents"][1]["parts"][0]["thoughtSignature"] =
        json!("skip_thought_signature_validator");
    let conversation = parse(super::STREAM, &other).conversation;
    assert!(conversation.items.iter().any(
        |item| matches!(item, Item::ToolCall(call) if call.id.as_deref() == Some("gemini_call_1_0"))
    ));
}
