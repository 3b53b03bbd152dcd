//! A Messages upstream (`upstream.wire = "messages"`, an Anthropic-compatible server): what is
//! sent (path under the server's root, `x-api-key`, `anthropic-version`), passthrough's bytes,
//! a 529 retried before the first byte, and harnesses without a Messages form refused at
//! start-up and per request, in the client's shape.

use harness_proxy::config::{Config, Wire};
use harness_proxy::state::{AppState, Host};
use serde_json::json;

use crate::support::anthropic::{self, root};
use crate::support::sse::read_all;
use crate::support::{FakeUpstream, TestApp, error_of, test_config};

/// A proxy in front of the fake Anthropic server, `passthrough` its default harness.
fn config(fake: &FakeUpstream) -> Config {
    let mut config = test_config(&root(fake));
    config.upstream.wire = Wire::Messages;
    config.default_harness = "passthrough".to_owned();
    config
}

fn messages_body() -> serde_json::Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test]
async fn passthrough_forwards_the_messages_bytes_to_the_root_s_v1_messages() {
    let fake = FakeUpstream::fixed(anthropic::text("Hello there.")).await;
    let app = TestApp::start(config(&fake)).await;
    let body = messages_body().to_string();
    let response = app
        .post("/v1/messages?beta=true")
        .header("x-api-key", "client-key")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = read_all(response).await;
    assert!(text.starts_with("event: message_start\n"), "{text}");
    assert!(
        text.contains("\"text\":\"there.\""),
        "Anthropic's events as they came: {text}"
    );

    let recorded = fake.requests();
    assert_eq!(recorded[0].path, "/v1/messages?beta=true");
    assert_eq!(recorded[0].body.as_ref(), body.as_bytes());
    assert_eq!(recorded[0].header("x-api-key"), Some("client-key"));
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded[0].header("authorization"), None);
}

#[tokio::test]
async fn a_configured_key_goes_in_x_api_key_and_replaces_the_client_s() {
    let fake = FakeUpstream::fixed(anthropic::text("Hi.")).await;
    let mut config = config(&fake);
    config.upstream.api_key = Some("server-key".to_owned());
    let app = TestApp::start(config).await;
    let response = app
        .post("/v1/messages")
        .header("x-api-key", "client-key")
        .header("anthropic-version", "2023-01-01")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let recorded = fake.requests();
    let keys: Vec<_> = recorded[0].headers.get_all("x-api-key").iter().collect();
    assert_eq!(keys, ["server-key"]);
    assert_eq!(recorded[0].header("authorization"), None);
    // The client's own version is its to choose.
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-01-01"));
}

#[tokio::test]
async fn an_overloaded_529_is_retried_before_anything_reached_the_client() {
    let fake = FakeUpstream::queue(vec![anthropic::overloaded(), anthropic::text("Back.")]).await;
    let mut config = config(&fake);
    config.upstream.max_retries = 1;
    let app = TestApp::start(config).await;
    let response = app
        .post("/v1/messages")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(read_all(response).await.contains("\"text\":\"ck.\""));
    assert_eq!(fake.count(), 2);
}

#[test]
fn a_default_harness_without_a_messages_form_stops_start_up_naming_it() {
    let mut config = Config::default();
    config.upstream.wire = Wire::Messages;
    config.titles.store = harness_proxy::config::StoreUrl::Memory;
    let err = AppState::build(config, Host::bare())
        .err()
        .expect("refused");
    let message = err.to_string();
    assert!(message.contains("upstream.wire"), "{message}");
    assert!(message.contains("harness `opencode`"), "{message}");
    assert!(
        message.contains("passthrough"),
        "the harnesses that can: {message}"
    );
}

#[tokio::test]
async fn a_request_for_a_harness_without_a_messages_form_is_refused_in_the_client_s_shape() {
    let fake = FakeUpstream::fixed(anthropic::text("never")).await;
    let app = TestApp::start(config(&fake)).await;
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let response = app.chat("pi", &chat).await;
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "harness_wire_unsupported"));
    assert!(message.contains("harness `pi`"), "{message}");

    let response = app
        .post("/v1/messages")
        .header("x-harness", "opencode")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("harness `opencode`")
    );
    assert_eq!(fake.count(), 0);
}

/// `claude-code` before the fake Anthropic server, titles off (the server sees only turns).
fn claude_code(fake: &FakeUpstream) -> Config {
    let mut config = config(fake);
    config.default_harness = "claude-code".to_owned();
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    config
}

#[tokio::test]
async fn a_streamed_thinking_and_tool_answer_reaches_a_claude_client_in_its_blocks() {
    let fake = FakeUpstream::fixed(anthropic::thinking_then_tool(
        "toolu_7",
        "Bash",
        &json!({"command": "ls -la"}),
    ))
    .await;
    let app = TestApp::start(claude_code(&fake)).await;
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
        "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}],
        "messages": [{"role": "user", "content": "list the files"}]});
    let response = app.post("/v1/messages").json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = read_all(response).await;
    assert!(text.contains(anthropic::THINKING), "{text}");
    assert!(text.contains("\"type\":\"tool_use\""), "{text}");
    assert!(text.contains("\"name\":\"Bash\""), "{text}");
    let arguments: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|e| e["delta"]["partial_json"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&arguments).unwrap(),
        json!({"command": "ls -la"})
    );
    assert!(text.contains("\"stop_reason\":\"tool_use\""), "{text}");
    assert!(text.contains("\"output_tokens\":17"), "{text}");

    let sent = fake.requests();
    assert_eq!(sent[0].path, "/v1/messages?beta=true");
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent[0].header("x-app"), Some("cli"));
    assert!(sent[0].header("x-claude-code-session-id").is_some());
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_a_chat_client_s_stream_once_in_its_shape() {
    let fake = FakeUpstream::fixed(anthropic::error_mid_stream("Half an answer")).await;
    let app = TestApp::start(claude_code(&fake)).await;
    let chat = json!({"model": "claude-sonnet-4-5", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let response = app.chat("claude-code", &chat).await;
    assert_eq!(response.status(), 200);
    let text = read_all(response).await;
    assert!(text.contains("Half "), "{text}");
    assert_eq!(text.matches("\"error\"").count(), 1, "{text}");
    assert!(text.contains("Overloaded"), "{text}");
}

#[tokio::test]
async fn a_529_reaches_each_front_in_its_own_shape() {
    let fake = FakeUpstream::fixed(anthropic::overloaded()).await;
    let app = TestApp::start(claude_code(&fake)).await;
    let chat = json!({"model": "claude-sonnet-4-5", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let response = app.chat("claude-code", &chat).await;
    let (status, _, message) = error_of(response).await;
    assert_eq!((status, message.as_str()), (529, "Overloaded"));

    let response = app
        .post("/v1/messages")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 529);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

/// A first turn of `list the files` through `harness` on the Messages upstream `fake`, titled
/// before it is answered; the conversation's settled title record.
async fn titled_first_turn(
    fake: &FakeUpstream,
    harness: &str,
    conversation: &str,
) -> serde_json::Value {
    let mut config = claude_code(fake);
    config.default_harness = harness.to_owned();
    config.titles.order = harness_proxy::config::TitleOrder::Before;
    config.titles.harnesses = vec![harness.to_owned()];
    let app = TestApp::start(config).await;
    let response = crate::titles::chat(
        &app,
        &crate::titles::first_turn("list the files\n"),
        conversation,
        "k",
    )
    .await;
    assert_eq!(response.status(), 200);
    read_all(response).await;
    crate::titles::settled(&app, conversation, "k").await
}

/// A Messages upstream that answers Claude Code's title request (its JSON schema) with a title,
/// and any other request with text.
async fn titling_upstream() -> FakeUpstream {
    FakeUpstream::start(|request, _| {
        if request.json()["output_config"]["format"]["type"] == "json_schema" {
            anthropic::text("{\"title\": \"Listing the files\"}")
        } else {
            anthropic::text("Here they are.")
        }
    })
    .await
}

#[tokio::test]
async fn claude_code_s_title_request_goes_first_in_its_form_and_its_json_title_is_the_title() {
    let fake = titling_upstream().await;
    let record = titled_first_turn(&fake, "claude-code", "conv-cc").await;
    assert_eq!(record["title"], "Listing the files");

    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    let (title, main) = (&sent[0], &sent[1]);
    assert_eq!(title.path, "/v1/messages?beta=true");
    let body = title.json();
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text",
            "text": "<session>\nlist the files\n</session>"}]}])
    );
    assert_eq!(body["tools"], json!([]));
    assert_eq!(body["temperature"], 1);
    assert!(
        body["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("x-anthropic-billing-header: cc_version=2.1.158.")
    );
    assert!(body["system"][1].get("cache_control").is_none());
    assert!(
        title
            .header("anthropic-beta")
            .unwrap()
            .ends_with("structured-outputs-2025-12-15")
    );
    assert!(main.json()["output_config"].get("format").is_none());
}

/// With the shipped titles config (`titles.harnesses` names claude-code; order `parallel`), a
/// first turn through claude-code is titled by Claude Code's own request, dispatched first.
#[tokio::test]
async fn claude_code_is_titled_by_default_with_its_own_request_first() {
    let fake = titling_upstream().await;
    let mut config = config(&fake);
    config.default_harness = "claude-code".to_owned();
    let app = TestApp::start(config).await;
    let first = crate::titles::first_turn("list the files\n");
    let response = crate::titles::chat(&app, &first, "conv-default", "k").await;
    assert_eq!(response.status(), 200);
    read_all(response).await;
    let record = crate::titles::settled(&app, "conv-default", "k").await;
    assert_eq!(record["title"], "Listing the files");
    assert_eq!(record["harness"], "claude-code");
    let sent = fake.requests();
    assert_eq!(sent.len(), 2, "one title request, one main request");
    assert_eq!(
        sent[0].json()["output_config"]["format"]["type"],
        "json_schema",
        "the title request is dispatched first"
    );
}

#[tokio::test]
async fn count_tokens_counts_the_messages_body_claude_code_sends() {
    let fake = FakeUpstream::fixed(anthropic::text("never")).await;
    let app = TestApp::start(claude_code(&fake)).await;
    let response = app
        .post("/v1/messages/count_tokens")
        .json(&json!({"model": "claude-sonnet-4-5",
            "messages": [{"role": "user", "content": "hello world"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    // Claude Code's prompt and the reminder, not the two words alone.
    let n = body["input_tokens"].as_u64().expect("a count");
    assert!((500..20_000).contains(&n), "{n}");
    assert_eq!(fake.count(), 0, "counted locally");
}

#[tokio::test]
async fn other_v1_routes_are_forwarded_under_the_root_s_v1() {
    let fake = FakeUpstream::fixed(crate::support::Reply::json(200, r#"{"data":[]}"#)).await;
    let app = TestApp::start(config(&fake)).await;
    let response = app
        .get("/v1/models?limit=5")
        .header("x-api-key", "k")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(fake.requests()[0].path, "/v1/models?limit=5");
}

#[tokio::test]
async fn a_claude_code_client_through_claude_code_keeps_none_of_its_own_system_text() {
    let fake = FakeUpstream::fixed(anthropic::text("Hi.")).await;
    let app = TestApp::start(claude_code(&fake)).await;
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.abc; cc_entrypoint=cli; cch=00000;"},
            {"type": "text", "text": "You are Claude Code, the client's own words."}
        ],
        "messages": [{"role": "user", "content": "hello"}]});
    let response = app
        .post("/v1/messages")
        .header("user-agent", "claude-cli/2.1.197 (external, cli)")
        .header("x-claude-code-session-id", "sess-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    read_all(response).await;
    let sent = fake.requests()[0].json();
    let system = sent["system"].to_string();
    assert!(!system.contains("cc_version=2.1.197"), "{system}");
    assert!(!system.contains("the client's own words"), "{system}");
    assert!(
        system.contains("cc_version=2.1.158."),
        "the harness's own line: {system}"
    );
    assert_eq!(
        fake.requests()[0].header("x-claude-code-session-id"),
        Some("sess-1")
    );
}

/// The content blocks of each assistant turn a Messages request carried upstream, in order.
pub(crate) fn assistant_turns(body: &serde_json::Value) -> Vec<&Vec<serde_json::Value>> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_array())
        .collect()
}

/// The thinking blocks of the assistant turns a Messages request carried upstream.
fn thinking_sent(body: &serde_json::Value) -> Vec<serde_json::Value> {
    assistant_turns(body)
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "thinking")
        .cloned()
        .collect()
}

/// Issue 34: the server checks its own thinking signature when the reasoning comes back. The
/// client gets the proxy's seal (which carries the server's signature, never the server's in
/// the clear), and the server gets its own signature back: from Claude Code's echoed thinking
/// block, and from Codex's echoed `encrypted_content`.
#[tokio::test]
async fn the_server_s_thinking_signature_goes_back_to_it_from_the_client_s_echo() {
    let fake = FakeUpstream::fixed(anthropic::thinking_then_tool(
        "toolu_7",
        "Bash",
        &json!({"command": "ls -la"}),
    ))
    .await;
    let app = TestApp::start(claude_code(&fake)).await;

    // Claude Code: its thinking block goes back as it came.
    let tools = json!([{"name": "Bash", "description": "Run", "input_schema": {"type": "object",
        "properties": {"command": {"type": "string"}}, "required": ["command"]}}]);
    let first = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools,
        "messages": [{"role": "user", "content": "list the files"}]});
    let response = app.post("/v1/messages").json(&first).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    let content = answer["content"].as_array().cloned().unwrap_or_default();
    let thinking = content
        .iter()
        .find(|b| b["type"] == "thinking")
        .expect("a thinking block");
    let sealed = thinking["signature"].as_str().unwrap_or_default();
    assert!(sealed.starts_with("hpr3."), "the proxy's seal: {sealed}");
    assert!(!sealed.contains(anthropic::SIGNATURE));
    let call = content
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a call");
    let second = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools,
        "messages": [{"role": "user", "content": "list the files"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                "content": "a.txt"}]}]});
    let response = app.post("/v1/messages").json(&second).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let sent = fake.requests();
    let echoed = thinking_sent(&sent[1].json());
    assert_eq!(echoed.len(), 1, "{echoed:?}");
    assert_eq!(echoed[0]["signature"], anthropic::SIGNATURE);
    assert_eq!(echoed[0]["thinking"], anthropic::THINKING);

    // Codex: the reasoning item's `encrypted_content` carries it.
    let tool = json!([{"type": "function", "name": "exec_command", "parameters": {"type": "object",
        "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]);
    let user = json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "list the files"}]});
    let first = json!({"model": "m", "stream": false, "store": false, "tools": tool,
        "include": ["reasoning.encrypted_content"], "input": [user]});
    let response = app.post("/v1/responses").json(&first).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    let output = answer["output"].as_array().cloned().unwrap_or_default();
    let reasoning = output
        .iter()
        .find(|i| i["type"] == "reasoning")
        .expect("reasoning");
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .is_some_and(|e| e.starts_with("hpr3.")),
        "{reasoning}"
    );
    let call = output
        .iter()
        .find(|i| i["type"] == "function_call")
        .expect("a call");
    let mut input = vec![user];
    input.extend(output.iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"}),
    );
    let second = json!({"model": "m", "stream": false, "store": false, "tools": tool,
        "include": ["reasoning.encrypted_content"], "input": input});
    let response = app
        .post("/v1/responses")
        .json(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let sent = fake.requests();
    let echoed = thinking_sent(&sent[3].json());
    assert_eq!(echoed.len(), 1, "{echoed:?}");
    assert_eq!(echoed[0]["signature"], anthropic::SIGNATURE);
}

/// Issue 34: a call the proxy answers upstream itself (its arguments cut) is answered in
/// Anthropic's form on a Messages upstream — the model's turn as `thinking` (with the server's
/// signature) and `tool_use` blocks, the error as a `tool_result` — not Chat's `tool` messages.
#[tokio::test]
async fn a_correction_on_a_messages_upstream_is_written_in_its_form() {
    let fake = FakeUpstream::start(|r: &crate::support::Recorded, _| {
        if anthropic::answers_a_tool(r) {
            anthropic::thinking_then_tool("toolu_ok", "Bash", &json!({"command": "ls -la"}))
        } else {
            anthropic::thinking_then_raw_tool("toolu_bad", "Bash", r#"{"command": "ls"#)
        }
    })
    .await;
    let app = TestApp::start(claude_code(&fake)).await;
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
        "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}],
        "messages": [{"role": "user", "content": "list the files"}]});
    let response = app.post("/v1/messages").json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    let call = answer["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .unwrap_or_default();
    assert_eq!(call["input"], json!({"command": "ls -la"}), "{answer}");

    let sent = fake.requests();
    assert_eq!(sent.len(), 2, "the first answer, then the correction");
    let correction = sent[1].json();
    assert_eq!(sent[1].path, "/v1/messages?beta=true");
    let messages = correction["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(messages.iter().all(|m| m["role"] != "tool"), "{correction}");
    let [.., turn, result] = messages.as_slice() else {
        panic!("{correction}");
    };
    assert_eq!(turn["role"], "assistant");
    assert_eq!(turn["content"][0]["type"], "thinking");
    assert_eq!(turn["content"][0]["signature"], anthropic::SIGNATURE);
    assert_eq!(
        turn["content"][1],
        json!({"type": "tool_use", "id": "toolu_bad", "name": "Bash", "input": {}})
    );
    assert_eq!(result["role"], "user");
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(result["content"][0]["tool_use_id"], "toolu_bad");
    assert_eq!(result["content"][0]["is_error"], true);
    assert!(
        result["content"][0]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Error:")),
        "{result}"
    );
}

/// Issue 34: a harness on a Messages upstream whose agent asks for no title (zcode) sends the
/// proxy's title request on that wire — to `/v1/messages`, as a Messages body — not a Chat body
/// the server cannot read.
#[tokio::test]
async fn zcode_s_title_request_on_a_messages_upstream_is_a_messages_request() {
    let fake = FakeUpstream::start(|request, _| {
        if request.json()["system"].is_string() {
            anthropic::text("Listing the files")
        } else {
            anthropic::text("Here they are.")
        }
    })
    .await;
    let record = titled_first_turn(&fake, "zcode", "conv-zc").await;
    assert_eq!(record["title"], "Listing the files", "{record}");

    let sent = fake.requests();
    let title = sent
        .iter()
        .find(|r| r.json()["system"].is_string())
        .expect("a title request");
    assert_eq!(title.path, "/v1/messages");
    let body = title.json();
    assert!(body.get("stream_options").is_none(), "{body}");
    assert!(body["max_tokens"].as_u64().is_some_and(|n| n > 0), "{body}");
    assert_eq!(body["messages"][0]["role"], "user");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .is_some_and(|t| t.contains("list the files")),
        "{body}"
    );
    assert_eq!(title.header("anthropic-version"), Some("2023-06-01"));
}
