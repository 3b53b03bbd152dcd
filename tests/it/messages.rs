//! The Anthropic Messages front through the real server: Claude Code's requests (shapes from
//! docs/wire.md §4) reach the Chat Completions upstream in opencode's form, and the answer comes
//! back as Anthropic SSE, one message JSON, or an Anthropic error.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::sse::{DONE, USAGE_CHUNK, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::tokens::assert_counts_the_rebuilt_body;
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};

const CLAUDE_UA: &str = "claude-cli/2.1.197 (external, sdk-cli)";
const SESSION: &str = "6d3c1a2e-0b7f-4c38-9a55-2f1e8d9c4b70";

/// A first turn as Claude Code 2.1 sends it (docs/wire.md §4): system blocks, a reminder block
/// before the prompt, Bash among the tools, `metadata.user_id` as a JSON text.
fn first_turn(stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "max_tokens": 32000,
        "stream": stream,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Working directory: /repo\nPlatform: linux", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nThis is a reminder.\n</system-reminder>"},
            {"type": "text", "text": "Create the file made_by_claude.txt", "cache_control": {"type": "ephemeral"}}
        ]}],
        "tools": [{"name": "Bash", "description": "Executes a bash command", "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"},
                "run_in_background": {"type": "boolean"}, "dangerouslyDisableSandbox": {"type": "boolean"}},
            "required": ["command"], "additionalProperties": false}}],
        "metadata": {"user_id": format!("{{\"device_id\":\"dev\",\"account_uuid\":\"\",\"session_id\":\"{SESSION}\"}}")},
        "thinking": {"type": "adaptive", "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"}
    })
}

/// Title requests get an empty answer; every other request `reply`.
async fn answering(reply: Reply) -> FakeUpstream {
    FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[DONE])
        } else {
            reply.clone()
        }
    })
    .await
}

async fn post_messages(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.post(path)
        .header("x-api-key", "sk-claude")
        .header("anthropic-version", "2023-06-01")
        .header("x-app", "cli")
        .header("user-agent", CLAUDE_UA)
        .json(body)
        .send()
        .await
        .expect("POST /v1/messages")
}

/// (event name, data JSON) of every SSE event, checking that each `event:` names its data's type.
fn events_of(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("an event: line");
            let data: Value = serde_json::from_str(
                e.lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("a data: line"),
            )
            .expect("data is JSON");
            assert_eq!(data["type"], name, "event name matches its type");
            (name.to_owned(), data)
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

fn bash_call_reply() -> Reply {
    bash_call_in(&[
        "{\"command\":\"echo hi > made_by_claude.txt\",",
        "\"description\":\"x\",\"workdir\":\"/repo\"}",
    ])
}

/// A `bash` call whose arguments stream in `pieces`.
fn bash_call_in(pieces: &[&str]) -> Reply {
    let call = |args: &str, head: bool| {
        let mut call = json!({"index": 0, "function": {"arguments": args}});
        if head {
            call["id"] = json!("call_b1");
            call["type"] = json!("function");
            call["function"]["name"] = json!("bash");
        }
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
                "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
        )
    };
    let mut chunks = vec![call("", true)];
    chunks.extend(pieces.iter().map(|piece| call(piece, false)));
    chunks.extend([
        finish_chunk("tool_calls"),
        USAGE_CHUNK.to_owned(),
        DONE.to_owned(),
    ]);
    Reply::sse(&chunks.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn invalid_tool_arguments_never_reach_claude_code_the_model_is_told_and_its_next_call_does() {
    const BROKEN: &str = "{\"command\": \"echo hi";
    for stream in [true, false] {
        // Cut arguments first; after the proxy's correction, a whole call.
        let upstream = FakeUpstream::start(|r: &Recorded, _| {
            if String::from_utf8_lossy(&r.body).contains("\"role\":\"tool\"") {
                bash_call_in(&["{\"command\": \"echo hi\"}"])
            } else {
                bash_call_in(&[BROKEN])
            }
        })
        .await;
        let app = TestApp::start(test_config(&upstream.base_url())).await;
        let response = post_messages(&app, "/v1/messages", &first_turn(stream)).await;
        assert_eq!(response.status(), 200);
        let (name, input) = if stream {
            let events = events_of(&read_all(response).await);
            let start = events
                .iter()
                .find(|(n, d)| {
                    n == "content_block_start" && d["content_block"]["type"] == "tool_use"
                })
                .expect("a tool_use block");
            let index = &start.1["index"];
            let input: String = events
                .iter()
                .filter(|(n, d)| n == "content_block_delta" && &d["index"] == index)
                .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
                .collect();
            (
                start.1["content_block"]["name"].clone(),
                serde_json::from_str::<Value>(&input).expect("the streamed input parses"),
            )
        } else {
            let message: Value = response.json().await.unwrap();
            let block = message["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_use")
                .expect("a tool_use block")
                .clone();
            (block["name"].clone(), block["input"].clone())
        };
        assert_eq!(name, "Bash", "stream {stream}");
        assert_eq!(input, json!({"command": "echo hi"}), "stream {stream}");
        // The model was told what was wrong with its cut arguments.
        let correction = upstream
            .main_requests()
            .pop()
            .expect("the correction")
            .json();
        let told = correction["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str().map(str::to_owned))
            .unwrap_or_default();
        assert!(
            told.contains("are not a JSON object"),
            "stream {stream}: {told}"
        );
    }
}

#[tokio::test]
async fn a_streamed_answer_is_anthropic_sse_and_the_upstream_sees_chat_completions() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = post_messages(&app, "/v1/messages?beta=true", &first_turn(true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().contains_key("x-request-id"));
    assert_eq!(response.headers()["x-conversation-id"], SESSION);
    let events = events_of(&read_all(response).await);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let message = &events[0].1["message"];
    assert!(
        message["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_"))
    );
    assert_eq!(message["model"], "mock-model");
    assert_eq!(
        events[2].1["delta"],
        json!({"type": "text_delta", "text": "Hello"})
    );
    assert_eq!(events[5].1["delta"]["stop_reason"], "end_turn");
    assert_eq!(events[5].1["usage"]["output_tokens"], 2);
    assert_eq!(events[5].1["usage"]["input_tokens"], 9);

    let sent = upstream.main_requests();
    let sent = sent.first().expect("one main request");
    assert_eq!(sent.path, "/v1/chat/completions", "no ?beta=true upstream");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-claude"));
    assert_eq!(
        sent.header("x-api-key"),
        None,
        "the key goes as Bearer only"
    );
    let body = sent.json();
    let messages = body["messages"].as_array().expect("messages");
    assert!(
        messages[0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("You are opencode")),
        "opencode's system prompt"
    );
    // The reminder is contextual: only the prompt reaches the upstream, quoted as opencode does.
    assert_eq!(
        &messages[1..],
        &[json!({"role": "user", "content": "\"Create the file made_by_claude.txt\""})]
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["bash"], "Bash is opencode's bash");
    assert_eq!(body["reasoning_effort"], "high");
}

#[tokio::test]
async fn a_tool_round_trip_speaks_claude_code_tools_to_the_client_and_opencode_upstream() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[DONE])
        } else if r.body.windows(6).any(|w| w == b"\"tool\"") {
            Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE])
        } else {
            bash_call_reply()
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = post_messages(&app, "/v1/messages?beta=true", &first_turn(true)).await;
    let events = events_of(&read_all(response).await);
    let start = events
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["content_block"]["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(start.1["content_block"]["name"], "Bash");
    let index = &start.1["index"];
    let input: String = events
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && &d["index"] == index)
        .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).expect("input JSON"),
        json!({"command": "cd /repo && echo hi > made_by_claude.txt", "description": "x"})
    );
    assert!(
        events
            .iter()
            .any(|(n, d)| n == "content_block_stop" && &d["index"] == index)
    );
    let delta = events
        .iter()
        .find(|(n, _)| n == "message_delta")
        .expect("delta");
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");

    // The follow-up, as Claude Code sends it after running the command.
    let id = start.1["content_block"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut follow_up = first_turn(true);
    let messages = follow_up["messages"].as_array_mut().expect("messages");
    messages.push(json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "run it", "signature": "harness-proxy"},
        {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "echo hi > made_by_claude.txt", "description": "x", "run_in_background": false}}
    ]}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": "(Bash completed with no output)", "is_error": false, "cache_control": {"type": "ephemeral"}}
    ]}));
    let response = post_messages(&app, "/v1/messages?beta=true", &follow_up).await;
    let events = events_of(&read_all(response).await);
    assert!(events.iter().any(|(_, d)| d["delta"]["text"] == "Done."));
    let sent = upstream.main_requests();
    let body = sent.last().expect("follow-up").json();
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        &messages[2..],
        &[
            json!({"role": "assistant", "content": "", "reasoning_content": "run it", "tool_calls": [{"type": "function", "id": "call_b1",
                "function": {"name": "bash", "arguments": "{\"command\":\"echo hi > made_by_claude.txt\",\"description\":\"x\"}"}}]}),
            json!({"role": "tool", "content": "(no output)", "tool_call_id": "call_b1"})
        ],
        "the thinking goes back as reasoning_content (opencode.reasoning = return), never as text; the call is opencode's bash"
    );
}

#[tokio::test]
async fn without_stream_the_answer_is_one_message_json() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut body = first_turn(false);
    body.as_object_mut().expect("object").remove("stream");
    let response = post_messages(&app, "/v1/messages", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let json: Value = response.json().await.expect("json");
    assert_eq!(json["type"], "message");
    assert_eq!(json["role"], "assistant");
    assert_eq!(
        json["content"],
        json!([{"type": "text", "text": "Hello world"}])
    );
    assert_eq!(json["stop_reason"], "end_turn");
    assert_eq!(json["stop_sequence"], Value::Null);
    assert_eq!(json["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn the_proxys_own_errors_are_anthropic_shaped_and_overload_is_529() {
    let gate = Arc::new(Notify::new());
    let upstream = answering(Reply::steps(vec![
        Step::Send(text_chunk("x").into_bytes()),
        Step::Wait(gate.clone()),
        Step::Send(finish_chunk("stop").into_bytes()),
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_concurrent_requests = 1;
    let app = TestApp::start(config).await;

    let response = post_messages(&app, "/v1/messages", &json!({"model": "m"})).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("messages"))
    );

    // A parse error quoting a 70 KB input back keeps its own message, cut short, in this shape.
    let huge = "a".repeat(70_000);
    let response = post_messages(&app, "/v1/messages", &json!(huge)).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("invalid") && message.contains("cut at") && message.len() < 8192,
        "{message:.200}"
    );

    // One streaming answer holds the only permit; the next request is turned away.
    let held = post_messages(&app, "/v1/messages", &first_turn(true)).await;
    assert_eq!(held.status(), 200);
    let response = post_messages(&app, "/v1/messages", &first_turn(true)).await;
    assert_eq!(response.status(), 529);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["type"], "overloaded_error");
    gate.notify_one();
    let _ = read_all(held).await;
}

#[tokio::test]
async fn count_tokens_answers_an_estimate_and_probes_answer_200() {
    let upstream = FakeUpstream::fixed(Reply::json(500, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // Through opencode the count is of the rebuilt request: opencode's system prompt and tools.
    for (path, range) in [
        ("/v1/messages/count_tokens?beta=true", 1_000..20_000),
        (
            "/harness/opencode/v1/messages/count_tokens?beta=true",
            1_000..20_000,
        ),
        (
            "/harness/passthrough/v1/messages/count_tokens?beta=true",
            10..200,
        ),
    ] {
        let response = post_messages(
            &app,
            path,
            &json!({"model": "m", "messages": [{"role": "user", "content": "hello world"}],
                "tools": first_turn(true)["tools"].clone()}),
        )
        .await;
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json().await.expect("json");
        let n = body["input_tokens"].as_u64().expect("a count");
        assert!(range.contains(&n), "{path}: {n} not in {range:?}");
    }
    assert_eq!(upstream.count(), 0, "counted locally");
    for path in [
        "/",
        "/api/hello",
        "/harness/opencode",
        "/harness/opencode/api/hello",
    ] {
        let head = app.client.head(app.url(path)).send().await.expect("HEAD");
        assert_eq!(head.status(), 200, "HEAD {path}");
        assert_eq!(
            app.get(path).send().await.expect("GET").status(),
            200,
            "GET {path}"
        );
    }
}

#[tokio::test]
async fn passthrough_forwards_messages_byte_for_byte_with_the_query() {
    let upstream = FakeUpstream::fixed(Reply::Full {
        status: 200,
        content_type: "application/json",
        body: br#"{"id":"msg_up","type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#.to_vec(),
        headers: Vec::new(),
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = first_turn(false).to_string();
    let response = app
        .post("/harness/passthrough/v1/messages?beta=true")
        .header("x-api-key", "sk-claude")
        .body(body.clone())
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.text().await.expect("body"),
        r#"{"id":"msg_up","type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#
    );
    let sent = upstream.requests();
    assert_eq!(sent[0].path, "/v1/messages?beta=true");
    assert_eq!(sent[0].body, body.as_bytes());
    assert_eq!(sent[0].header("x-api-key"), Some("sk-claude"));
}

#[tokio::test]
async fn claude_code_s_own_title_request_is_forwarded_translated_and_teed_into_the_title() {
    let upstream = FakeUpstream::start(|_: &Recorded, _| {
        Reply::sse(&[
            &text_chunk("{\"title\":\"Create the greeting file\"}"),
            &finish_chunk("stop"),
            DONE,
        ])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // docs/agents.md "What the Messages front does": interactive Claude Code asks for a session
    // title with `tools: []` and an `output_config.format` JSON schema `{title}`.
    let body = json!({
        "model": "mock-model",
        "max_tokens": 512,
        "stream": false,
        "system": [{"type": "text", "text": "Generate a concise title for this coding session."}],
        "messages": [{"role": "user", "content": "Create the file made_by_claude.txt"}],
        "tools": [],
        "metadata": {"user_id": format!("{{\"device_id\":\"dev\",\"account_uuid\":\"\",\"session_id\":\"{SESSION}\"}}")},
        "output_config": {"format": {"type": "json_schema", "schema": {
            "type": "object", "properties": {"title": {"type": "string"}},
            "required": ["title"], "additionalProperties": false}}}
    });
    let response = post_messages(&app, "/v1/messages?beta=true", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-title-url"],
        format!("/titles/{SESSION}")
    );
    let message: Value = response.json().await.unwrap();
    assert_eq!(
        message["content"][0]["text"],
        "{\"title\":\"Create the greeting file\"}"
    );
    // One upstream request, the client's own (its prompt kept, not opencode's form).
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].json()["messages"][0]["content"],
        "Generate a concise title for this coding session."
    );
    let record = crate::titles::settled(&app, SESSION, "sk-claude").await;
    assert_eq!(record["title"], "Create the greeting file", "{record}");
}

#[tokio::test]
async fn hundreds_of_kept_mcp_tools_make_a_bounded_header() {
    let upstream = answering(Reply::sse(&[
        &text_chunk("ok"),
        &finish_chunk("stop"),
        DONE,
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut body = first_turn(true);
    let mut tools = body["tools"].as_array().unwrap().clone();
    let dropped: Vec<String> = (0..600)
        .map(|i| format!("mcp__claude_ai_Example_Server__some_long_tool_name_{i:04}"))
        .collect();
    for name in &dropped {
        tools.push(
            json!({"name": name, "description": "An MCP tool", "input_schema": {"type": "object"}}),
        );
    }
    body["tools"] = Value::Array(tools);
    let response = post_messages(&app, "/v1/messages", &body).await;
    assert_eq!(response.status(), 200);
    let header = response.headers()["x-harness-passthrough-tools"]
        .to_str()
        .unwrap()
        .to_owned();
    read_all(response).await;
    // At most 2 KiB of names, then how many more there were.
    let (names, more) = header.rsplit_once(", ...(+").expect("a count of the rest");
    assert!(names.len() <= 2048, "{} bytes of names", names.len());
    let more: usize = more.strip_suffix(" more)").unwrap().parse().unwrap();
    let shown: Vec<&str> = names.split(", ").collect();
    assert_eq!(shown.len() + more, dropped.len(), "{header}");
    assert_eq!(shown, dropped[..shown.len()], "the first names, in order");
}

#[tokio::test]
async fn count_tokens_beyond_its_permits_is_529_and_a_30_mib_run_is_estimated() {
    let upstream = FakeUpstream::fixed(Reply::json(500, "{}")).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_token_counts = 1;
    let app = TestApp::start(config).await;
    let small = json!({"model": "m", "messages": [{"role": "user", "content": "hello world"}]});
    // The one permit is held (as a count in progress would hold it): two counts arrive.
    let held = app
        .state
        .token_counts
        .clone()
        .acquire_owned()
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        post_messages(&app, "/v1/messages/count_tokens", &small),
        post_messages(&app, "/harness/opencode/v1/messages/count_tokens", &small),
    );
    for response in [a, b] {
        assert_eq!(response.status(), 529);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
    }
    drop(held);
    // Freed: a count of one 30 MiB run of `a` is answered, estimated by its length.
    let run = "a".repeat(30 * 1024 * 1024);
    let big = json!({"model": "m", "messages": [{"role": "user", "content": run}]});
    let response = post_messages(&app, "/harness/passthrough/v1/messages/count_tokens", &big).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let n = body["input_tokens"].as_u64().unwrap();
    assert_eq!(
        n,
        (30 * 1024 * 1024 / 4 + 4) as u64,
        "len/4 plus the message overhead"
    );
    // Rebuilt by opencode first (quoted, with opencode's prompt): still answered, by length.
    let response = post_messages(&app, "/v1/messages/count_tokens", &big).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["input_tokens"].as_u64().unwrap() > n);
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_wrong_method_on_the_messages_routes_answers_405_in_anthropics_shape() {
    let upstream = FakeUpstream::fixed(Reply::json(500, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for path in [
        "/v1/messages",
        "/harness/opencode/v1/messages",
        "/v1/messages/count_tokens",
    ] {
        let response = app
            .get(path)
            .header("x-api-key", "sk-claude")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["type"], "error", "{path}: {body}");
        assert_eq!(
            body["error"]["type"], "invalid_request_error",
            "{path}: {body}"
        );
        assert!(
            body["error"]["message"].as_str().unwrap().contains("GET"),
            "{body}"
        );
    }
    assert_eq!(upstream.count(), 0);
}

/// Claude Code compacts by `count_tokens`: the count must be of what the upstream will read.
/// A Claude Code turn (its long system prompt, its tools, a tool round trip) is counted within
/// 10 % of the exact count of the body the upstream then received; the client's own request,
/// which the old count measured, is far from it.
#[tokio::test]
async fn count_tokens_is_within_ten_percent_of_the_rebuilt_upstream_body() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[
        &crate::support::sse::text_chunk("ok"),
        &crate::support::sse::finish_chunk("stop"),
        crate::support::sse::DONE,
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let system = "You are Claude Code, Anthropic's official CLI for Claude. ".repeat(300);
    let mut turn = first_turn(false);
    turn["system"] = json!([{"type": "text", "text": system}]);
    turn["messages"] = json!([
        {"role": "user", "content": [{"type": "text", "text": "Create the file notes.txt with a short poem"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
            "input": {"command": "printf 'roses\\n' > notes.txt", "description": "Write the poem"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}]}
    ]);
    let counted = |path: &'static str| {
        let app = &app;
        let turn = turn.clone();
        async move {
            let response = post_messages(app, path, &turn).await;
            assert_eq!(response.status(), 200);
            let body: Value = response.json().await.unwrap();
            body["input_tokens"].as_u64().unwrap() as f64
        }
    };
    let estimate = counted("/v1/messages/count_tokens").await;
    let client_side = counted("/harness/passthrough/v1/messages/count_tokens").await;
    let response = post_messages(&app, "/v1/messages", &turn).await;
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap();
    let sent = upstream
        .main_requests()
        .pop()
        .expect("the turn went upstream")
        .json();
    assert_counts_the_rebuilt_body("count_tokens", estimate, &sent, client_side);
}

/// A chunk that carries text, a call the bridge translates and the finish at once (an upstream
/// that answered JSON, made a stream; the shaper re-emits the call before the rest): the Claude
/// Code client still gets the call's input.
#[tokio::test]
async fn a_call_and_its_text_in_one_chunk_keep_the_call_s_input() {
    use crate::support::sse::DONE;
    let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Listing.", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\",\"description\":\"List\"}"}}]},
            "finish_reason": "tool_calls"}]});
    let event = format!("data: {chunk}\n\n");
    let upstream =
        crate::support::FakeUpstream::fixed(crate::support::Reply::sse(&[&event, DONE])).await;
    let mut config = crate::support::test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = crate::support::TestApp::start(config).await;
    let answer: serde_json::Value = app
        .post("/v1/messages")
        .header("x-app", "cli")
        .json(&serde_json::json!({"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "list"}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"], "additionalProperties": false}}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = answer["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .unwrap_or_default();
    assert_eq!(call["input"]["command"], "ls", "{answer}");
}
