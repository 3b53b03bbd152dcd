//! The proof of `calibrate claude-code`: Claude Code's captured main request, read by the
//! Messages front and rewritten by the `claude-code` harness for a Messages upstream with the
//! written files, must carry what Claude Code sent in its second and third system blocks, byte for
//! byte, and its tools (name, description, schema) in its order. The first block, the billing
//! line, is neither compared nor shown.

use std::path::Path;

use bytes::Bytes;
use chrono::Utc;
use http::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::claude_code::blocks;
use crate::config::{Config, Wire};
use crate::harness::HarnessRequest;
use crate::harness::opencode::tools::HostInfo;

/// The upstream body the harness makes of `main` with the prompts under `dir`.
pub fn rewrite(dir: &Path, main: &Value, host: HostInfo) -> Result<Value, String> {
    let mut config = Config::default();
    config.upstream.wire = Wire::Messages;
    let harness = super::agents_check::build_harness("claude-code", dir, host, &config)?;
    let body = serde_json::to_vec(main)
        .map(Bytes::from)
        .map_err(|err| format!("the captured request cannot be written again: {err}"))?;
    let mut headers = HeaderMap::new();
    headers.insert("x-harness-client", HeaderValue::from_static("claude-code"));
    let inbound = crate::protocols::messages::parse(&body, &headers)
        .map_err(|err| format!("the captured request does not parse: {err}"))?;
    let prepared = harness
        .prepare(HarnessRequest {
            conversation: inbound.conversation,
            chat_body: None,
            headers: &headers,
            now: Utc::now(),
        })
        .map_err(|err| format!("the harness refused the captured request: {err}"))?;
    serde_json::from_slice(&prepared.upstream_body.to_bytes())
        .map_err(|err| format!("the rewrite is not JSON: {err}"))
}

/// What differs between what Claude Code sent and the rewrite: empty when the SDK line, the
/// prompt and the tools are the same.
pub fn compare(main: &Value, rewritten: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    let sent = blocks(main).unwrap_or_default();
    let made = |n: usize| rewritten["system"][n]["text"].as_str().unwrap_or_default();
    for (what, sent, made) in [
        ("the SDK line (system block 2)", sent[0], made(1)),
        ("the prompt (system block 3)", sent[1], made(2)),
    ] {
        if sent != made {
            differences.push(format!("{what} differs: {}", first_difference(sent, made)));
        }
    }
    let tools = |body: &Value| -> Vec<(String, String)> {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let name = t["name"].as_str().unwrap_or("?").to_owned();
                let same = serde_json::json!({"name": t["name"], "description": t["description"],
                    "input_schema": t["input_schema"]});
                (name, same.to_string())
            })
            .collect()
    };
    let (sent, made) = (tools(main), tools(rewritten));
    let names = |tools: &[(String, String)]| -> Vec<String> {
        tools.iter().map(|(name, _)| name.clone()).collect()
    };
    if names(&sent) != names(&made) {
        differences.push(format!(
            "tools: Claude Code sent {:?}, the harness {:?}",
            names(&sent),
            names(&made)
        ));
    }
    for (name, text) in &sent {
        if made.iter().any(|(n, t)| n == name && t != text) {
            differences.push(format!("tool `{name}`: its description or schema differs"));
        }
    }
    differences
}

/// The first line that differs, both sides shown escaped and cut.
fn first_difference(sent: &str, made: &str) -> String {
    let (mut sent_lines, mut made_lines) = (sent.split('\n'), made.split('\n'));
    let mut n = 1;
    loop {
        match (sent_lines.next(), made_lines.next()) {
            (Some(a), Some(b)) if a == b => n += 1,
            (a, b) => {
                let show = |line: Option<&str>| {
                    line.map_or_else(|| "(ends)".to_owned(), |l| format!("`{}`", super::shown(l)))
                };
                return format!("line {n}: Claude Code {} / harness {}", show(a), show(b));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_differing_line_is_named_and_the_billing_line_never_compared() {
        let main = json!({"system": [{"text": "x-anthropic-billing-header: a;"},
            {"text": "You are Acme."}, {"text": "One\nTwo\nThree"}],
            "tools": [{"name": "Bash", "description": "Runs.", "input_schema": {"type": "object"}}]});
        let same = json!({"system": [{"text": "x-anthropic-billing-header: b;"},
            {"text": "You are Acme."}, {"text": "One\nTwo\nThree"}],
            "tools": [{"name": "Bash", "description": "Runs.", "input_schema": {"type": "object"}}]});
        assert!(compare(&main, &same).is_empty());
        let other = json!({"system": [{"text": ""}, {"text": "You are Acme."},
            {"text": "One\nTwo\u{1b}"}], "tools": [{"name": "Bash", "description": "Runs it.",
            "input_schema": {"type": "object"}}]});
        assert_eq!(
            compare(&main, &other),
            [
                "the prompt (system block 3) differs: line 2: Claude Code `Two` / harness `Two\\u{1b}`",
                "tool `Bash`: its description or schema differs"
            ]
        );
    }
}
