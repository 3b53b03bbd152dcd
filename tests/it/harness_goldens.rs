//! Data-driven golden cases for the reference's chat harnesses: `tests/golden/harnesses/*.json`.
//!
//! A case names a harness, gives a Chat Completions request and the proxy's headers (`x-harness-cwd`,
//! `x-harness-date`, the route's prompt-cache scope…), and says what the upstream body must be:
//! its top-level keys in order (`keys`), its messages exactly (`messages`), its tools' names in
//! order (`tool_names`), and other fields (`fields`). The harnesses' texts come from the tiny
//! prompts of `tests/golden/prompts/`, so every expected value is written by hand from
//! harnesses.md's vectors and rules, never pasted from the proxy's output.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use chrono::TimeZone;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::Config;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::harness::{HarnessRequest, Registry, Setup};
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::chat::request::parse_conversation;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

pub(crate) fn registry() -> Registry {
    let mut config = Config::default();
    config.opencode.platform = Some("linux".into());
    config.opencode.timezone = Some("UTC".into());
    let prompts = Prompts::load(Some(&golden_dir().join("prompts"))).expect("golden prompts");
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).expect("UTC"),
    };
    Registry::build(&Setup {
        config: &config,
        prompts: &prompts,
        host,
        profiles: Profiles::load(&[]).expect("profiles"),
    })
    .expect("every harness builds from the golden prompts")
}

fn headers(case: &Value) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in case["headers"].as_object().into_iter().flatten() {
        map.append(
            HeaderName::from_bytes(k.as_bytes()).expect("header name"),
            HeaderValue::from_str(v.as_str().expect("string")).expect("header value"),
        );
    }
    map
}

/// The body a harness sends for a case's request.
pub(crate) fn upstream_body(
    registry: &Registry,
    harness: &str,
    request: &Value,
    headers: &HeaderMap,
) -> Value {
    let body = Bytes::from(serde_json::to_vec(request).expect("request"));
    let conversation = parse_conversation(&body).expect("request parses");
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
        .single()
        .expect("date");
    let prepared = registry
        .get(harness)
        .unwrap_or_else(|| panic!("harness {harness}"))
        .prepare(HarnessRequest {
            conversation,
            chat_body: Some(&body),
            headers,
            now,
        })
        .expect("the harness rebuilds the request");
    serde_json::from_slice(&prepared.upstream_body.to_bytes()).expect("upstream JSON")
}

fn run_case(registry: &Registry, case: &Value) -> Vec<String> {
    let harness = case["harness"].as_str().expect("harness");
    let body = upstream_body(registry, harness, &case["request"], &headers(case));
    let expect = &case["expect"];
    let mut failures = Vec::new();
    let mut check = |what: &str, want: Option<&Value>, got: Value| {
        if let Some(want) = want
            && *want != got
        {
            failures.push(format!(
                "{what}:\n  expected {}\n  actual   {}",
                serde_json::to_string_pretty(want).unwrap_or_default(),
                serde_json::to_string_pretty(&got).unwrap_or_default()
            ));
        }
    };
    let keys: Vec<Value> = body
        .as_object()
        .expect("object")
        .keys()
        .map(|k| Value::String(k.clone()))
        .collect();
    check(
        "top-level keys in order",
        expect.get("keys"),
        Value::Array(keys),
    );
    check("messages", expect.get("messages"), body["messages"].clone());
    let names: Vec<Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].clone())
        .collect();
    check("tool names", expect.get("tool_names"), Value::Array(names));
    for (field, want) in expect["fields"].as_object().into_iter().flatten() {
        check(field, Some(want), body[field].clone());
    }
    failures
}

#[test]
fn every_chat_harness_matches_its_golden_cases() {
    let registry = registry();
    let dir = golden_dir().join("harnesses");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut harnesses: Vec<String> = Vec::new();
    let mut report = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read golden");
        let case: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        harnesses.push(case["harness"].as_str().unwrap_or_default().to_owned());
        let failures = run_case(&registry, &case);
        if !failures.is_empty() {
            report.push(format!(
                "{}\n{}",
                file.file_name().unwrap_or_default().to_string_lossy(),
                failures.join("\n")
            ));
        }
    }
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
        assert!(
            harnesses.iter().any(|h| h == harness),
            "no golden case for {harness}"
        );
    }
    assert!(
        report.is_empty(),
        "{} of {} harness golden cases failed:\n\n{}",
        report.len(),
        files.len(),
        report.join("\n\n")
    );
}
