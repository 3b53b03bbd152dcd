//! Data-driven golden cases for the Responses adapter: `tests/golden/responses/*.json`.
//!
//! A request case gives a Responses request (and headers) and what must come out: the Chat
//! Completions body the adapter makes (`chat`), what it reports (`dropped_tools`,
//! `client_profile`, `error`), and optionally what the `opencode` harness then sends upstream
//! (`upstream_messages`, `upstream_tool_names`, `upstream_system_contains`). A stream case gives an
//! upstream chat stream and the Responses events that must come out (`events`: `[name, data]`
//! where `data` lists the fields that must match). Expected values are written by hand from the
//! OpenAI Responses wire format and docs/wire.md §4 (Codex 0.171), never generated.

use std::path::{Path, PathBuf};

use chrono::TimeZone;
use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::OpencodeConfig;
use harness_proxy::harness::collaboration::Collaboration;
use harness_proxy::harness::opencode::Opencode;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::ChatAnswerReader;
use harness_proxy::protocols::responses::{Stamp, parse_with};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The cases were written for the reference identity line and dropped instructions: both pinned.
fn harness() -> Opencode {
    let config: OpencodeConfig =
        serde_json::from_value(json!({"timezone": "UTC", "platform": "linux",
        "identity": "reference", "instructions": "drop"}))
        .expect("config");
    let prompts = Prompts::load(Some(&golden_dir().join("prompts"))).expect("golden prompts");
    let collaboration = Collaboration::from_prompts(&prompts, false);
    let profiles = Profiles::load(&[]).expect("built-in profiles");
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).unwrap(),
    };
    Opencode::new(
        &config,
        &prompts,
        host,
        profiles,
        collaboration,
        "http://127.0.0.1:8000/v1",
    )
    .expect("harness")
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

fn stamp() -> Stamp {
    Stamp {
        id: "resp_test".into(),
        created_at: 1_764_417_600,
    }
}

/// Every field of `want` is in `got` with the same value (objects recursively; arrays of the same
/// length, element by element).
fn contains(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => want
            .iter()
            .all(|(k, w)| got.get(k).is_some_and(|g| contains(w, g))),
        (Value::Array(want), Value::Array(got)) => {
            want.len() == got.len() && want.iter().zip(got).all(|(w, g)| contains(w, g))
        }
        _ => want == got,
    }
}

fn run_request_case(case: &Value) -> Vec<String> {
    let body = serde_json::to_vec(&case["request"]).expect("request");
    let headers = headers(case);
    let expect = &case["expect"];
    let inbound = match parse_with(&body, &headers, stamp()) {
        Ok(inbound) => inbound,
        Err(err) => {
            let want = &expect["error"];
            let (status, code) = (err.status().as_u16(), err.code());
            return if want["status"] == json!(status) && want["code"] == json!(code) {
                Vec::new()
            } else {
                vec![format!("unexpected error {status} {code}: {err}")]
            };
        }
    };
    if expect.get("error").is_some() {
        return vec!["expected an error".into()];
    }
    let mut failures = Vec::new();
    // The conversation as the upstream Chat Completions request it stands for (always streamed:
    // the renderer needs the events whatever the client asked).
    let chat_request = harness_proxy::harness::plain::chat_request(&inbound.conversation, true);
    let chat: Value = serde_json::to_value(&chat_request).expect("chat request is JSON");
    let mut check = |what: &str, want: &Value, got: &Value| {
        if want != got {
            failures.push(format!(
                "{what}:\n  expected {}\n  actual   {}",
                serde_json::to_string_pretty(want).unwrap_or_default(),
                serde_json::to_string_pretty(got).unwrap_or_default()
            ));
        }
    };
    if let Some(want) = expect.get("chat") {
        check("chat body", want, &chat);
    }
    if let Some(want) = expect.get("chat_messages") {
        check("chat messages", want, &chat["messages"]);
    }
    if let Some(want) = expect.get("client_stream") {
        check(
            "client_stream",
            want,
            &json!(inbound.conversation.options.stream),
        );
    }
    if let Some(want) = expect.get("dropped_tools") {
        check("dropped tools", want, &json!(inbound.dropped_tools));
    }
    if let Some(want) = expect.get("client_profile") {
        check(
            "client profile",
            want,
            &json!(inbound.conversation.client.profile),
        );
    }
    if let Some(want) = expect.get("conversation_key") {
        check(
            "conversation key",
            want,
            &json!(inbound.conversation.client.conversation_key),
        );
    }
    let wants_upstream = [
        "upstream_messages",
        "upstream_tool_names",
        "upstream_system_contains",
    ]
    .iter()
    .any(|k| expect.get(*k).is_some());
    if wants_upstream {
        let harness_headers = headers;
        let request = inbound.conversation;
        let now = chrono::Utc
            .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
            .single()
            .expect("date");
        let built = harness()
            .build(request, &harness_headers, now)
            .expect("harness builds");
        let upstream: Value =
            serde_json::from_slice(&built.body.to_bytes()).expect("upstream JSON");
        if let Some(want) = expect.get("upstream_messages") {
            let rest = upstream["messages"]
                .as_array()
                .map(|m| m.iter().skip(1).cloned().collect())
                .unwrap_or_default();
            check(
                "upstream messages after the system one",
                want,
                &Value::Array(rest),
            );
        }
        if let Some(want) = expect.get("upstream_tool_names") {
            let names: Vec<Value> = upstream["tools"]
                .as_array()
                .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect())
                .unwrap_or_default();
            check("upstream tool names", want, &Value::Array(names));
        }
        for text in expect["upstream_system_contains"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let system = upstream["messages"][0]["content"]
                .as_str()
                .unwrap_or_default();
            let text = text.as_str().expect("string");
            if !system.contains(text) {
                failures.push(format!("upstream system lacks `{text}`"));
            }
        }
        for text in expect["upstream_absent_text"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let text = text.as_str().expect("string");
            if String::from_utf8_lossy(&built.body.to_bytes()).contains(text) {
                failures.push(format!("upstream body must not contain `{text}`"));
            }
        }
    }
    failures
}

/// Renders `chunks` (chat SSE events, `data:` payloads) through the request's renderer.
fn render(case: &Value) -> Vec<(String, Value)> {
    let body = serde_json::to_vec(&case["request"]).expect("request");
    let inbound = parse_with(&body, &headers(case), stamp()).expect("request parses");
    let mut renderer = inbound.renderer.expect("the Responses front renders");
    let mut bytes = Vec::new();
    renderer.start(&mut bytes);
    let mut reader = ChatAnswerReader::new();
    let mut events = Vec::new();
    for chunk in case["chat_stream"].as_array().expect("chat_stream") {
        let payload = match chunk {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        reader.push(format!("data: {payload}\n\n").as_bytes(), &mut events);
    }
    if case["cut"] != json!(true) {
        reader.push(b"data: [DONE]\n\n", &mut events);
    }
    reader.finish(&mut events);
    for event in events {
        renderer.event(event, &mut bytes);
    }
    bytes
        .iter()
        .map(|frame| {
            let text = std::str::from_utf8(frame).expect("UTF-8");
            let (name_line, data_line) = text.trim_end().split_once('\n').expect("two lines");
            let name = name_line.strip_prefix("event: ").expect("event line");
            let data = data_line.strip_prefix("data: ").expect("data line");
            (
                name.to_owned(),
                serde_json::from_str(data).expect("data is JSON"),
            )
        })
        .collect()
}

fn run_stream_case(case: &Value) -> Vec<String> {
    let got = render(case);
    let want = case["expect"]["events"].as_array().expect("events");
    let mut failures = Vec::new();
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    let want_names: Vec<&str> = want.iter().map(|w| w[0].as_str().unwrap_or("")).collect();
    if names != want_names {
        failures.push(format!(
            "event names:\n  expected {want_names:?}\n  actual   {names:?}"
        ));
        return failures;
    }
    for (i, ((name, data), want)) in got.iter().zip(want).enumerate() {
        if data["type"] != json!(name) || data["sequence_number"] != json!(i) {
            failures.push(format!("event {i}: type/sequence_number wrong: {data}"));
        }
        if !contains(&want[1], data) {
            failures.push(format!(
                "event {i} `{name}`:\n  expected ⊆ {}\n  actual     {data}",
                want[1]
            ));
        }
    }
    failures
}

#[test]
fn responses_golden_cases() {
    let dir = golden_dir().join("responses");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "golden cases in {}", dir.display());
    let mut report = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let case: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let failures = if case.get("chat_stream").is_some() {
            run_stream_case(&case)
        } else {
            run_request_case(&case)
        };
        if !failures.is_empty() {
            report.push(format!(
                "{}\n{}",
                file.file_name().unwrap_or_default().to_string_lossy(),
                failures.join("\n")
            ));
        }
    }
    assert!(
        report.is_empty(),
        "{} of {} cases failed:\n\n{}",
        report.len(),
        files.len(),
        report.join("\n\n")
    );
}
