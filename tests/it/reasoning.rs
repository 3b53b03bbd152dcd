//! The reasoning round trip (issue 19) through the real server, against a fake upstream that
//! enforces DeepSeek V4's thinking-mode rule (`FakeUpstream::deepseek_thinking`): each front goes
//! through a tool turn (reasoning, then a call) and a second turn in which the client echoes the
//! history as the real client does — a Chat client its `reasoning_content`, Claude Code its
//! thinking block (text omitted, signature kept), Codex its reasoning item (`encrypted_content`
//! kept). The second turn must reach the model with `reasoning_content` on the assistant tool-call
//! message; with `opencode.reasoning = "drop"` none is sent and the upstream's 400 comes back.

use harness_proxy::config::{Config, StoreUrl};
use serde_json::{Value, json};

use crate::support::binary::Proxy;
use crate::support::fake_upstream::THINKING_TEXT;
use crate::support::redis::{fresh_prefix, shared_url, use_redis};
use crate::support::{FakeUpstream, TestApp, test_config};

async fn app(upstream: &FakeUpstream, drop: bool) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    if drop {
        config.opencode.reasoning = harness_proxy::config::ReasoningMode::Drop;
    }
    TestApp::start(config).await
}

/// The assistant tool-call message of the last main request the upstream saw.
fn upstream_call_message(upstream: &FakeUpstream) -> Value {
    let last = upstream
        .main_requests()
        .pop()
        .expect("a main request")
        .json();
    last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .cloned()
        .expect("an assistant tool-call message")
}

async fn post(app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
    let response = app
        .post(path)
        .header("x-api-key", "sk-test")
        .header("user-agent", "codex_exec/0.171.0")
        .json(body)
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON answer"))
}

fn chat_turn(history: Vec<Value>) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "list the files"})];
    messages.extend(history);
    json!({
        "model": "deepseek-v4", "stream": false, "messages": messages,
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
            "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
    })
}

async fn chat_round_trip(drop: bool) -> (FakeUpstream, u16, Value) {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, drop).await;
    let (status, first) = post(&app, "/v1/chat/completions", &chat_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let message = &first["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], THINKING_TEXT);
    let call = &message["tool_calls"][0];
    // opencode echoes the assistant message whole, reasoning included.
    let echoed = json!({"role": "assistant", "content": null,
        "reasoning_content": message["reasoning_content"], "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"});
    let (status, second) = post(
        &app,
        "/v1/chat/completions",
        &chat_turn(vec![echoed, result]),
    )
    .await;
    (upstream, status, second)
}

#[tokio::test]
async fn a_chat_client_s_reasoning_content_goes_back_on_its_tool_call_message() {
    let (upstream, status, second) = chat_round_trip(false).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["choices"][0]["message"]["content"], "Done.");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

#[tokio::test]
async fn with_reasoning_drop_none_is_sent_and_deepseek_s_400_comes_back() {
    let (upstream, status, second) = chat_round_trip(true).await;
    assert_eq!(status, 400, "{second}");
    assert!(
        second.to_string().contains("must be passed back"),
        "{second}"
    );
    assert!(
        upstream_call_message(&upstream)
            .get("reasoning_content")
            .is_none()
    );
}

fn messages_turn(history: Vec<Value>) -> Value {
    let mut messages =
        vec![json!({"role": "user", "content": [{"type": "text", "text": "list the files"}]})];
    messages.extend(history);
    json!({
        "model": "deepseek-v4", "max_tokens": 32000, "stream": false, "messages": messages,
        "tools": [{"name": "Bash", "description": "Executes a bash command", "input_schema": {
            "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}],
        "thinking": {"type": "adaptive", "display": "omitted"}
    })
}

#[tokio::test]
async fn claude_code_s_thinking_block_brings_the_reasoning_back_in_its_signature() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let (status, first) = post(&app, "/v1/messages", &messages_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let content = first["content"].as_array().expect("content");
    let thinking = content
        .iter()
        .find(|b| b["type"] == "thinking")
        .expect("a thinking block");
    assert_eq!(thinking["thinking"], THINKING_TEXT);
    let signature = thinking["signature"].as_str().expect("a signature");
    assert_unreadable(signature);
    assert!(signature.starts_with("hpr2."), "{signature}");
    let call = content
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block");
    // With `display: "omitted"` Claude Code keeps the block but not its text.
    let echoed = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": signature},
        call
    ]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": "a.txt"}
    ]});
    let (status, second) = post(&app, "/v1/messages", &messages_turn(vec![echoed, result])).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["content"][1]["text"], "Done.", "{second}");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

#[tokio::test]
async fn a_forged_signature_is_ignored_not_an_error() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let echoed = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": "hpr1.Zm9yZ2VkIGJ5IGEgY2xpZW50IHdobyBrbm93cyBubyBrZXk"},
        {"type": "tool_use", "id": "call_ds_1", "name": "Bash", "input": {"command": "ls"}}
    ]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_ds_1", "content": "a.txt"}
    ]});
    let (status, second) = post(&app, "/v1/messages", &messages_turn(vec![echoed, result])).await;
    // Nothing to send back: the upstream's own 400, in Anthropic's shape, not a proxy error.
    assert_eq!(status, 400, "{second}");
    assert_eq!(second["type"], "error", "{second}");
    assert!(
        upstream_call_message(&upstream)
            .get("reasoning_content")
            .is_none()
    );
}

/// Issue 30 item 6: the seal is encrypted, not only signed (`encrypted_content` decoded to the
/// reasoning text): no part of the reasoning can be read out of it.
fn assert_unreadable(seal: &str) {
    use base64::Engine;
    let payload = seal.split_once('.').map_or(seal, |(_, payload)| payload);
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    let words = &THINKING_TEXT.as_bytes()[..THINKING_TEXT.len().min(12)];
    assert!(
        !bytes.windows(words.len()).any(|w| w == words),
        "the reasoning reads in the clear in {seal}"
    );
}

fn codex_turn(history: Vec<Value>) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]}),
    ];
    input.extend(history);
    json!({
        "model": "deepseek-v4", "stream": false, "input": input,
        "tools": [{"type": "function", "name": "exec_command", "strict": false, "parameters": {"type": "object",
            "properties": {"cmd": {"type": "string"}}, "required": ["cmd"], "additionalProperties": false}}],
        "reasoning": {"summary": "auto"}, "store": false,
        "include": ["reasoning.encrypted_content"]
    })
}

#[tokio::test]
async fn codex_s_reasoning_item_brings_the_reasoning_back_in_its_encrypted_content() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let (status, first) = post(&app, "/v1/responses", &codex_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let output = first["output"].as_array().expect("output");
    let mut reasoning = output
        .iter()
        .find(|i| i["type"] == "reasoning")
        .cloned()
        .expect("a reasoning item");
    assert_unreadable(reasoning["encrypted_content"].as_str().unwrap_or_default());
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .is_some_and(|e| e.starts_with("hpr2.")),
        "{reasoning}"
    );
    let call = output
        .iter()
        .find(|i| i["type"] == "function_call")
        .cloned()
        .expect("a function call");
    assert_eq!(call["name"], "exec_command");
    // The summary emptied: only `encrypted_content` can carry the reasoning back.
    reasoning["summary"] = json!([]);
    let result =
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"});
    let (status, second) = post(
        &app,
        "/v1/responses",
        &codex_turn(vec![reasoning, call, result]),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

/// pi, Qwen Code, Cline, aider and SDK scripts echo the assistant's calls but not its
/// reasoning: the proxy remembers the reasoning of the answer that made the calls, per caller.
#[tokio::test]
async fn a_client_that_echoes_no_reasoning_gets_it_sent_back_from_the_answer_it_had() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let (status, first) = post(&app, "/v1/chat/completions", &chat_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let call = first["choices"][0]["message"]["tool_calls"][0].clone();
    let echoed = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"});
    let second = chat_turn(vec![echoed, result]);
    let (status, answer) = post(&app, "/v1/chat/completions", &second).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "Done.");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );

    // Another caller echoing the same call id is not given this caller's reasoning.
    let response = app
        .post("/v1/chat/completions")
        .header("x-api-key", "sk-someone-else")
        .json(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
}

/// Callers without a credential would all share one scope, so the memo serves them nothing
/// (issue 30): caller B, echoing caller A's call id, gets none of A's reasoning sent upstream in
/// its request, only what its own request proves (here nothing, and the upstream's 400).
#[tokio::test]
async fn an_anonymous_caller_echoing_another_s_call_id_gets_none_of_its_reasoning() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let anonymous = |body: &Value| app.post("/v1/chat/completions").json(body).send();
    let first = anonymous(&chat_turn(vec![])).await.expect("A's turn");
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.expect("JSON");
    let call = first["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(
        first["choices"][0]["message"]["reasoning_content"],
        THINKING_TEXT
    );
    let echoed = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"});
    let second = anonymous(&chat_turn(vec![echoed, result]))
        .await
        .expect("B's turn");
    assert_eq!(second.status(), 400, "the thinking rule, unmet");
    let sent = upstream_call_message(&upstream);
    assert_eq!(sent["tool_calls"][0]["id"], call["id"]);
    assert!(
        sent.get("reasoning_content").is_none(),
        "A's reasoning went upstream in B's request: {sent}"
    );
}

/// The same for a Messages client that drops its thinking blocks (pi over `/v1/messages`).
#[tokio::test]
async fn a_messages_client_that_drops_thinking_blocks_still_passes_the_thinking_rule() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let (status, first) = post(&app, "/v1/messages", &messages_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let call = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .expect("a tool_use block");
    let echoed = json!({"role": "assistant", "content": [call]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": "a.txt"}
    ]});
    let (status, second) = post(&app, "/v1/messages", &messages_turn(vec![echoed, result])).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

/// pi's Google client: no call ids, no thoughts in its history, only each call part's
/// `thoughtSignature` kept. The signature carries the upstream's call id, so the reasoning
/// remembered for it goes back and the thinking rule holds.
#[tokio::test]
async fn a_gemini_client_that_drops_call_ids_still_passes_the_thinking_rule() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let app = app(&upstream, false).await;
    let path = "/v1beta/models/deepseek-v4:generateContent";
    let tools = json!([{"functionDeclarations": [{"name": "bash", "parametersJsonSchema": {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]}]);
    let user = json!({"role": "user", "parts": [{"text": "list the files"}]});
    let (status, first) = post(&app, path, &json!({"contents": [user], "tools": tools})).await;
    assert_eq!(status, 200, "{first}");
    let mut part = first["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .cloned()
        .expect("a call");
    // pi keeps a signature only when it is valid base64, as Google's are.
    let signature = part["thoughtSignature"].as_str().expect("a signature");
    assert!(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, signature).is_ok(),
        "{signature} is not standard base64"
    );
    part["functionCall"].as_object_mut().unwrap().remove("id");
    let echoed = json!({"role": "model", "parts": [part]});
    let result = json!({"role": "user", "parts": [{"functionResponse": {"name": "bash",
        "response": {"output": "a.txt"}}}]});
    let (status, second) = post(
        &app,
        path,
        &json!({"contents": [user, echoed, result], "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    let message = upstream_call_message(&upstream);
    assert_eq!(message["reasoning_content"], THINKING_TEXT);
    assert_eq!(message["tool_calls"][0]["id"], "call_ds_1");
}

/// Two replicas sharing `store`: the first tool turn answered by one, the next turn (a client
/// echoing no reasoning) sent to the other, which finds the reasoning in the shared store.
async fn a_turn_continued_on_the_other_replica_passes(store: impl Fn(&mut Config)) {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let mut config = test_config(&upstream.base_url());
    store(&mut config);
    let one = TestApp::start(config.clone()).await;
    let two = TestApp::start(config).await;
    let (status, first) = post(&one, "/v1/chat/completions", &chat_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let call = first["choices"][0]["message"]["tool_calls"][0].clone();
    // The first replica's write is off the answer's path: wait for it, as time would.
    one.state.memory.reasoning.settled().await;
    let echoed = json!({"role": "assistant", "content": null, "tool_calls": [call]});
    let result = json!({"role": "tool", "tool_call_id": call["id"], "content": "a.txt"});
    let (status, answer) = post(
        &two,
        "/v1/chat/completions",
        &chat_turn(vec![echoed, result]),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

#[tokio::test]
async fn replicas_on_one_sqlite_file_share_the_reasoning_of_a_client_that_echoes_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    a_turn_continued_on_the_other_replica_passes(|config| {
        config.titles.store = StoreUrl::Sqlite(path.clone());
    })
    .await;
}

#[tokio::test]
async fn replicas_on_one_redis_share_the_reasoning_of_a_client_that_echoes_none() {
    let Some(url) = shared_url("reasoning memo across replicas").await else {
        return;
    };
    let prefix = fresh_prefix(&url);
    a_turn_continued_on_the_other_replica_passes(|config| {
        use_redis(config, &url, &prefix.name);
    })
    .await;
}

/// Replicas given the same `opencode.reasoning_key_file` (deploy/ mounts one Secret in each)
/// open each other's seals: Claude Code's thinking signature from one replica goes back
/// through the other. The memo cannot help here (memory store): only the seal carries it.
#[tokio::test]
async fn replicas_with_one_reasoning_key_file_open_each_other_s_seals() {
    let upstream = FakeUpstream::deepseek_thinking().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("reasoning-key");
    std::fs::write(&key_file, "one secret for every replica\n").expect("write the key");
    let mut config = test_config(&upstream.base_url());
    config.opencode.reasoning_key_file = Some(key_file);
    let one = TestApp::start(config.clone()).await;
    let two = TestApp::start(config).await;
    let (status, first) = post(&one, "/v1/messages", &messages_turn(vec![])).await;
    assert_eq!(status, 200, "{first}");
    let content = first["content"].as_array().expect("content");
    let signature = content
        .iter()
        .find(|b| b["type"] == "thinking")
        .map(|b| b["signature"].clone())
        .expect("a thinking block");
    let call = content
        .iter()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .expect("a tool_use block");
    let echoed = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": signature}, call
    ]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": "a.txt"}
    ]});
    let (status, second) = post(&two, "/v1/messages", &messages_turn(vec![echoed, result])).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        upstream_call_message(&upstream)["reasoning_content"],
        THINKING_TEXT
    );
}

/// A shared store says replicas sit behind one balancer; with no shared seal key, start-up
/// says that Claude Code and Codex turns moving between them lose their reasoning.
#[tokio::test]
async fn start_up_warns_when_replicas_share_redis_but_not_a_reasoning_key() {
    let Some(url) = shared_url("reasoning key warning").await else {
        return;
    };
    let upstream = FakeUpstream::deepseek_thinking().await;
    let prefix = fresh_prefix(&url);
    let store = [
        ("HARNESS_PROXY__TITLES__STORE", url.as_str()),
        ("HARNESS_PROXY__TITLES__REDIS_PREFIX", prefix.name.as_str()),
    ];
    let warning = "opencode.reasoning_key is unset";
    let proxy = Proxy::start(&upstream.base_url(), &store).await;
    let logs = proxy.wait_for_logs(|logs| logs.contains(warning)).await;
    let line = logs
        .lines()
        .find(|l| l.contains(warning))
        .unwrap_or_default();
    assert!(line.contains("WARN"), "{line}");
    proxy.terminate();
    let keyed = [
        store[0],
        store[1],
        ("HARNESS_PROXY__OPENCODE__REASONING_KEY", "one secret"),
    ];
    let proxy = Proxy::start(&upstream.base_url(), &keyed).await;
    // Serving is logged after the state (and so the warning) was built.
    let logs = proxy
        .wait_for_logs(|logs| logs.contains("harness-proxy serving"))
        .await;
    assert!(!logs.contains(warning), "{logs}");
    proxy.terminate();
}
