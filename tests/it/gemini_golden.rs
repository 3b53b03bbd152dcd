//! Data-driven golden cases for the Gemini adapter: `tests/golden/gemini/*.json`.
//!
//! A request case gives a Gemini request (its path's `model` and `action`, its headers) and what
//! must come out: the plain Chat Completions body the conversation stands for (`chat`, or only
//! its `chat_messages`), what the parse reports (`dropped_tools`, `client_profile`, `aside`,
//! `client_stream`), text that must appear nowhere upstream (`absent_text`), and optionally what
//! the `opencode` harness sends after its system message (`upstream_messages`) and text its system
//! message must hold (`upstream_system_contains`), and the title's input (`first_user_text`). A stream case gives
//! an upstream chat stream and the Gemini events that must come out (`events`: each a subset of
//! the event's `GenerateContentResponse`), and the closing `error` of a cut stream. Expected
//! values are written by hand from the Gemini API's wire format (docs/wire.md §5), never generated.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use chrono::TimeZone;
use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::OpencodeConfig;
use harness_proxy::harness::collaboration::Collaboration;
use harness_proxy::harness::opencode::Opencode;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::memory::facts::ConversationFacts;
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::gemini::parse_with;
use harness_proxy::protocols::{ChatAnswerReader, Inbound, Request};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{Value, json};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

pub(crate) fn harness() -> Opencode {
    let config: OpencodeConfig = serde_json::from_value(json!({"timezone": "UTC",
        "platform": "linux", "identity": "reference", "instructions": "drop"}))
    .expect("config");
    let prompts = Prompts::load(Some(&golden_dir().join("prompts"))).expect("golden prompts");
    let collaboration = Collaboration::from_prompts(&prompts, false);
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).unwrap(),
    };
    let profiles = Profiles::load(&[]).expect("built-in profiles");
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

fn parse(case: &Value) -> Inbound {
    let body = Bytes::from(serde_json::to_vec(&case["request"]).expect("request"));
    let params = vec![
        (
            "model".to_owned(),
            case["model"].as_str().expect("model").to_owned(),
        ),
        (
            "action".to_owned(),
            case["action"].as_str().expect("action").to_owned(),
        ),
    ];
    let headers = headers(case);
    let request = Request {
        method: &Method::POST,
        params: &params,
        query: Some("alt=sse"),
        headers: &headers,
        body: &body,
    };
    parse_with(&request, "resp_golden".into()).expect("the request parses")
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
    let inbound = parse(case);
    let expect = &case["expect"];
    let mut failures = Vec::new();
    let chat = serde_json::to_value(harness_proxy::harness::plain::chat_request(
        &inbound.conversation,
        true,
    ))
    .expect("chat request is JSON");
    let mut check = |what: &str, want: Option<&Value>, got: &Value| {
        if let Some(want) = want
            && want != got
        {
            failures.push(format!("{what}:\n  expected {want}\n  actual   {got}"));
        }
    };
    let c = &inbound.conversation;
    check("chat body", expect.get("chat"), &chat);
    check(
        "chat messages",
        expect.get("chat_messages"),
        &chat["messages"],
    );
    check(
        "client_stream",
        expect.get("client_stream"),
        &json!(c.options.stream),
    );
    check("aside", expect.get("aside"), &json!(c.client.aside));
    check(
        "dropped tools",
        expect.get("dropped_tools"),
        &json!(inbound.dropped_tools),
    );
    check(
        "client profile",
        expect.get("client_profile"),
        &json!(c.client.profile),
    );
    if let Some(want) = expect.get("upstream_messages") {
        let now = chrono::Utc
            .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
            .single()
            .expect("date");
        let built = harness()
            .build(inbound.conversation.clone(), &headers(case), now)
            .expect("harness builds");
        let upstream: Value =
            serde_json::from_slice(&built.body.to_bytes()).expect("upstream JSON");
        let rest: Vec<Value> = upstream["messages"].as_array().expect("messages")[1..].to_vec();
        check(
            "upstream messages after the system one",
            Some(want),
            &Value::Array(rest),
        );
        let system = upstream["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        for text in expect["upstream_system_contains"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let text = text.as_str().expect("string");
            check(
                "the upstream system message holds",
                Some(&json!(text)),
                &json!(system.contains(text).then_some(text)),
            );
        }
    }
    if let Some(want) = expect.get("first_user_text") {
        let facts = ConversationFacts::from_conversation(&inbound.conversation);
        check("first user text", Some(want), &json!(facts.first_user_text));
    }
    for text in expect["absent_text"].as_array().into_iter().flatten() {
        let text = text.as_str().expect("string");
        if chat.to_string().contains(text) {
            failures.push(format!("the chat body must not contain `{text}`"));
        }
    }
    failures
}

fn run_stream_case(case: &Value) -> Vec<String> {
    let mut renderer = parse(case).renderer.expect("the Gemini front renders");
    let mut reader = ChatAnswerReader::new();
    let (mut events, mut bytes) = (Vec::new(), Vec::new());
    renderer.start(&mut bytes);
    for chunk in case["chat_stream"].as_array().expect("chat_stream") {
        reader.push(format!("data: {chunk}\n\n").as_bytes(), &mut events);
    }
    if case["cut"] != json!(true) {
        reader.push(b"data: [DONE]\n\n", &mut events);
    }
    reader.finish(&mut events);
    for event in events {
        renderer.event(event, &mut bytes);
    }
    let text = String::from_utf8(bytes.concat()).expect("UTF-8");
    let mut failures = Vec::new();
    let mut got = Vec::new();
    let mut closing = None;
    for frame in text.split("\r\n\r\n").filter(|f| !f.is_empty()) {
        match frame.strip_prefix("data: ") {
            Some(data) => got.push(serde_json::from_str::<Value>(data).expect("data is JSON")),
            None => closing = Some(serde_json::from_str::<Value>(frame.trim()).expect("bare JSON")),
        }
    }
    let want = case["expect"]["events"].as_array().expect("events");
    if got.len() != want.len() {
        failures.push(format!(
            "{} events, expected {}:\n{text}",
            got.len(),
            want.len()
        ));
    }
    for (i, (want, got)) in want.iter().zip(&got).enumerate() {
        if !contains(want, got) {
            failures.push(format!(
                "event {i}:\n  expected ⊆ {want}\n  actual     {got}"
            ));
        }
    }
    match (case["expect"].get("error"), &closing) {
        (Some(want), Some(got)) if contains(want, got) => {}
        (None, None) => {}
        (want, got) => failures.push(format!("closing error: expected {want:?}, got {got:?}")),
    }
    failures
}

#[test]
fn gemini_golden_cases() {
    let dir = golden_dir().join("gemini");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "golden cases in {}", dir.display());
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
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            report.push(format!("{name}\n{}", failures.join("\n")));
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
