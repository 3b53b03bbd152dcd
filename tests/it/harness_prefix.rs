//! Prefix stability for every chat harness (issue 31, item 5): what the real agent renders once
//! per session is rendered once per conversation and kept, so over four turns of one conversation
//! (a call and its result, an answer, a new question) each upstream body extends the one before
//! it byte for byte: the same keys and values but `messages`, and the earlier messages a prefix
//! of the later ones. The client is opencode, echoing the history as it does.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::harness_goldens::{registry, upstream_body};

/// The conversation after `turns` turns, as an opencode client sends it.
fn request(turns: usize) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are opencode.\nWorking directory: /home/u/app"}),
        json!({"role": "user", "content": "list the files"}),
    ];
    for n in 1..turns {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\",\"description\":\"List files\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{n}"), "content": format!("file_{n}.txt\n")}));
        messages.push(json!({"role": "assistant", "content": format!("There is file_{n}.txt.")}));
        messages.push(json!({"role": "user", "content": format!("question {n}")}));
    }
    json!({"model": "m", "stream": true, "messages": messages, "tools": [
        {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "workdir": {"type": "string"}, "description": {"type": "string"}}, "required": ["command", "description"]}}},
        {"type": "function", "function": {"name": "write", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}}, "required": ["filePath", "content"]}}}
    ]})
}

#[test]
fn every_chat_harness_extends_the_last_turn_byte_for_byte() {
    let registry = registry();
    let mut headers = HeaderMap::new();
    headers.insert("user-agent", HeaderValue::from_static("opencode/1.18.33"));
    headers.insert(
        "x-harness-prompt-cache-scope",
        HeaderValue::from_static("hpck_prefix"),
    );
    let mut failures = Vec::new();
    for harness in [
        "pi",
        "qwen-code",
        "kimi-code",
        "kimi-cli",
        "deepseek-tui",
        "minimal",
        "little-coder",
        "mini-swe-agent",
        "swe-agent",
        "terminus-2",
    ] {
        let bodies: Vec<Value> = (1..=4)
            .map(|turns| upstream_body(&registry, harness, &request(turns), &headers))
            .collect();
        for (n, pair) in bodies.windows(2).enumerate() {
            let rest = |body: &Value| {
                let mut body = body.clone();
                body.as_object_mut().map(|b| b.remove("messages"));
                serde_json::to_string(&body).unwrap_or_default()
            };
            if rest(&pair[0]) != rest(&pair[1]) {
                failures.push(format!(
                    "{harness}: turn {} changed more than its messages",
                    n + 2
                ));
            }
            let (before, after) = (
                pair[0]["messages"].as_array().cloned().unwrap_or_default(),
                pair[1]["messages"].as_array().cloned().unwrap_or_default(),
            );
            let grows = after.len() > before.len()
                && before
                    .iter()
                    .zip(&after)
                    .all(|(b, a)| serde_json::to_string(b).ok() == serde_json::to_string(a).ok());
            if !grows {
                failures.push(format!(
                    "{harness}: turn {}'s messages do not extend turn {}'s:\n  {}\n  {}",
                    n + 2,
                    n + 1,
                    serde_json::to_string(&before).unwrap_or_default(),
                    serde_json::to_string(&after).unwrap_or_default()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
