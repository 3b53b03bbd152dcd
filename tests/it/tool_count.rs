//! What one request's tools can make the proxy spend (issue 30, item 1): past `limits.max_tools`
//! a 413 in the client's own shape before any work on them, and under it a cost linear in their
//! number, measured as the proxy process's CPU time (its `/proc` ticks, every thread), not as
//! wall-clock time, so a busy machine slows both sides of the ratio alike.

use serde_json::{Value, json};

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, text_chunk};
use crate::support::{FakeUpstream, Reply, TestApp, error_of, test_config};

/// `count` client tools, each a small function no harness tool shares a name with.
fn tools(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            json!({"type": "function", "function": {
                "name": format!("mcp_tool_{i}"),
                "description": "A tool of some MCP server.",
                "parameters": {"type": "object",
                    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["query"]}}})
        })
        .collect()
}

fn chat_with_tools(count: usize) -> Value {
    json!({"model": "m", "stream": false,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": tools(count)})
}

#[tokio::test]
async fn past_max_tools_every_front_answers_413_in_its_own_shape_and_nothing_goes_upstream() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("hi"), DONE])).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_tools = 3;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;

    let chat = app.chat("opencode", &chat_with_tools(4)).await;
    let (status, code, message) = error_of(chat).await;
    assert_eq!((status, code.as_str()), (413, "too_many_tools"));
    assert!(message.contains("limits.max_tools"), "{message}");

    let names: Vec<Value> = (0..4)
        .map(|i| json!({"name": format!("t{i}"), "input_schema": {"type": "object"}}))
        .collect();
    let messages = app
        .post("/v1/messages")
        .json(&json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}], "tools": names}))
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), 413);
    let body: Value = messages.json().await.unwrap();
    assert_eq!(body["type"], "error", "Anthropic's shape: {body}");
    assert_eq!(body["error"]["type"], "request_too_large", "{body}");

    let declarations: Vec<Value> = (0..4)
        .map(|i| json!({"name": format!("t{i}"), "parametersJsonSchema": {"type": "object"}}))
        .collect();
    let gemini = app
        .post("/v1beta/models/m:generateContent")
        .json(
            &json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": declarations}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(gemini.status(), 413);
    let body: Value = gemini.json().await.unwrap();
    assert_eq!(body["error"]["code"], 413, "Google's shape: {body}");
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}");

    // Under the limit the same request is served.
    let fine = app.chat("opencode", &chat_with_tools(3)).await;
    assert_eq!(fine.status(), 200);
    assert_eq!(
        upstream.requests().len(),
        1,
        "only the request under the limit went up"
    );
}

/// The process's CPU time so far, in clock ticks (utime + stime of `/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // The command name is in parentheses and may hold spaces: count fields after its close.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the whole line (utime, stime) are 12 and 13 after the name.
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// The CPU ticks `rounds` requests with `count` tools cost the proxy, each answered 200.
async fn cost(proxy: &Proxy, count: usize, rounds: usize) -> u64 {
    let client = reqwest::Client::new();
    let body = serde_json::to_vec(&chat_with_tools(count)).unwrap();
    let before = cpu_ticks(proxy.pid());
    for _ in 0..rounds {
        let response = client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("content-type", "application/json")
            .header("x-harness", "opencode")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
    }
    cpu_ticks(proxy.pid()) - before
}

#[tokio::test]
async fn forty_thousand_tools_cost_about_ten_times_four_thousand_not_a_hundred() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[&text_chunk("hi"), DONE])).await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LIMITS__MAX_TOOLS", "100000"),
            ("HARNESS_PROXY__TITLES__ORDER", "off"),
        ],
    )
    .await;
    // Warm up (first-use allocations, the schema compiler), then five small against one large,
    // ten times the tools: a linear cost gives a ratio near 2, a quadratic one near 20.
    cost(&proxy, 4_000, 1).await;
    let small = cost(&proxy, 4_000, 5).await.max(1);
    let large = cost(&proxy, 40_000, 1).await;
    let ratio = large as f64 / small as f64;
    assert!(
        ratio < 5.0,
        "40,000 tools once cost {large} ticks, 4,000 tools five times {small}: ratio {ratio:.2} \
         (linear ≈ 2, quadratic ≈ 20)"
    );
}
