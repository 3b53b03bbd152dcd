//! What a client's tool schemas can make the proxy spend (issue 30, item 5): a schema over
//! `limits.max_tool_schema_bytes` is refused in the client's own shape before any work on it, and
//! the checks of the model's calls against a large schema run off the async runtime, so the
//! proxy keeps answering other requests (its `/healthz`) while they run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Reply, TestApp, error_of, test_config};

/// A `bash` tool whose `command` must match one of `patterns` patterns: compiling it and checking
/// a call against it cost in proportion to their number.
fn heavy_bash(patterns: usize) -> Value {
    let branches: Vec<Value> = (0..patterns)
        .map(|i| json!({"type": "string", "pattern": format!("^c{i}$")}))
        .collect();
    json!({"type": "function", "function": {"name": "bash", "description": "Runs a command.",
        "parameters": {"type": "object",
            "properties": {"command": {"anyOf": branches}, "description": {"type": "string"}},
            "required": ["command"]}}})
}

/// An upstream answer of `count` calls of opencode's `bash`, each running the last command the
/// heavy schema allows (so a check tries every branch).
fn calls_answer(count: usize, last: usize) -> Vec<String> {
    let mut chunks: Vec<String> = (0..count)
        .map(|i| {
            let call = json!({"index": i, "id": format!("call_{i}"), "type": "function",
                "function": {"name": "bash",
                    "arguments": json!({"command": format!("c{last}"), "description": "d"}).to_string()}});
            let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [call]},
                "finish_reason": null}]});
            format!("data: {chunk}\n\n")
        })
        .collect();
    chunks.push(finish_chunk("tool_calls"));
    chunks.push(DONE.to_owned());
    chunks
}

#[tokio::test]
async fn a_tool_schema_over_max_tool_schema_bytes_is_refused_413_in_the_clients_shape() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("hi"), DONE])).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_tool_schema_bytes = 1024;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;

    let chat = |tool: Value| {
        json!({"model": "m", "stream": false,
            "messages": [{"role": "user", "content": "hi"}], "tools": [tool]})
    };
    let refused = app.chat("opencode", &chat(heavy_bash(100))).await;
    let (status, code, message) = error_of(refused).await;
    assert_eq!((status, code.as_str()), (413, "tool_schema_too_large"));
    assert!(
        message.contains("`bash`") && message.contains("limits.max_tool_schema_bytes"),
        "{message}"
    );

    let schema = heavy_bash(100)["function"]["parameters"].clone();
    let messages = app
        .post("/v1/messages")
        .json(&json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "bash", "input_schema": schema}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), 413);
    let body: Value = messages.json().await.unwrap();
    assert_eq!(body["type"], "error", "Anthropic's shape: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_tool_schema_bytes")),
        "{body}"
    );

    // Under the limit the same tool is served.
    let fine = app.chat("opencode", &chat(heavy_bash(3))).await;
    assert_eq!(fine.status(), 200);
    assert_eq!(
        upstream.requests().len(),
        1,
        "only the small schema went up"
    );
}

#[tokio::test]
async fn healthz_answers_while_calls_are_checked_against_heavy_schemas() {
    const PATTERNS: usize = 20_000;
    const CALLS: usize = 200;
    let upstream = FakeUpstream::fixed(Reply::sse(
        &calls_answer(CALLS, PATTERNS - 1)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LIMITS__MAX_TOOL_SCHEMA_BYTES", "4194304"),
            ("HARNESS_PROXY__TITLES__ORDER", "off"),
        ],
    )
    .await;
    // More heavy requests than the proxy's runtime has worker threads (one per core): checked
    // on the runtime, they would hold every worker.
    let heavy = std::thread::available_parallelism().map_or(2, std::num::NonZero::get) + 1;
    let body = serde_json::to_vec(&json!({"model": "m", "stream": false,
        "messages": [{"role": "user", "content": "run it"}],
        "tools": [heavy_bash(PATTERNS)]}))
    .unwrap();
    let finished = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::new();
    let mut answers = Vec::new();
    for _ in 0..heavy {
        let (client, body, finished) = (client.clone(), body.clone(), finished.clone());
        let url = format!("{}/v1/chat/completions", proxy.base);
        answers.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .header("x-harness", "opencode")
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status();
            let answer: Value = response.json().await.unwrap();
            finished.fetch_add(1, Ordering::SeqCst);
            (status, answer)
        }));
    }
    // The signal: every heavy request is upstream, whose answer (all its calls at once) is then
    // checked against the heavy schema.
    upstream.wait_for_requests(heavy).await;
    let health = tokio::time::timeout(
        Duration::from_secs(120),
        client.get(format!("{}/healthz", proxy.base)).send(),
    )
    .await
    .expect("/healthz within 120 s")
    .unwrap();
    let done_before_health = finished.load(Ordering::SeqCst);
    assert_eq!(health.status(), 200);
    for answer in answers {
        let (status, answer) = answer.await.unwrap();
        assert_eq!(status, 200, "{answer}");
        let calls = answer["choices"][0]["message"]["tool_calls"]
            .as_array()
            .expect("the calls reach the client");
        assert_eq!(calls.len(), CALLS);
        assert_eq!(calls[0]["function"]["name"], "bash");
    }
    assert_eq!(
        done_before_health, 0,
        "/healthz waited for {done_before_health} of {heavy} heavy requests to finish"
    );
}
