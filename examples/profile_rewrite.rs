//! Profiling driver (not a test): rewrites a 50-turn request many times.
use bytes::Bytes;
use harness_proxy::config::Config;
use harness_proxy::harness::HarnessRequest;
use harness_proxy::prompts::Prompts;
use http::HeaderMap;
use serde_json::json;

fn main() {
    let mut messages =
        vec![json!({"role": "system", "content": "You are a coding agent. ".repeat(200)})];
    for i in 0..50 {
        messages.push(json!({"role": "user", "content": format!("Step {i}: please look at src/lib.rs and fix the bug\nthanks")}));
        messages.push(json!({"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": format!("call_{i}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"cat src/lib.rs\",\"description\":\"Show file\"}"}}
        ]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": "fn main() {}\n".repeat(40)}));
    }
    let body = Bytes::from(
        serde_json::to_vec(&json!({"model": "m", "stream": true, "messages": messages}))
            .expect("json"),
    );
    let config = Config::default();
    let prompts = Prompts::load(None).expect("prompts");
    let registry = harness_proxy::state::build_registry(
        &config,
        &prompts,
        &harness_proxy::state::Host::bare(),
    )
    .expect("registry");
    let harness = registry.get("opencode").expect("opencode");
    let headers = HeaderMap::new();
    let now = chrono::Utc::now();
    for _ in 0..2000 {
        std::hint::black_box(
            harness
                .prepare(HarnessRequest {
                    conversation: harness_proxy::protocols::chat::request::parse_conversation(
                        &body,
                    )
                    .expect("parses"),
                    chat_body: Some(&body),
                    headers: &headers,
                    now,
                })
                .expect("ok"),
        );
    }
}
