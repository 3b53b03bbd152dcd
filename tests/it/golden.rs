//! Data-driven golden cases for the opencode harness: `tests/golden/opencode/*.json`, each an
//! input request (plus config and headers) and the upstream body or parts of it that docs/wire.md
//! says must come out. Expected values are written by hand from docs/wire.md, never generated.
//!
//! The cases use the tiny prompts under `tests/golden/prompts/` so whole bodies stay readable.

use std::path::{Path, PathBuf};

use chrono::TimeZone;
use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::OpencodeConfig;
use harness_proxy::harness::collaboration::Collaboration;
use harness_proxy::harness::opencode::Opencode;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::memory::facts::ConversationFacts;
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::chat::request::parse_conversation;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The golden world: 2025-11-29 12:00 UTC on linux, temp dir /tmp, no $SHELL, an upstream on a
/// host no provider owns (a case may name another with `"upstream"`). The cases were written for
/// the reference identity line, the reference's dropped instructions and its strict tool
/// filtering (`extra_tools = "drop"`: client tools with no opencode counterpart are not sent), so
/// these are pinned unless a case's config says otherwise.
fn harness(overrides: &Value, upstream: Option<&str>) -> Opencode {
    let mut base = serde_json::json!({"timezone": "UTC", "platform": "linux", "identity": "reference", "instructions": "drop", "extra_tools": "drop"});
    if let (Some(base), Some(over)) = (base.as_object_mut(), overrides.as_object()) {
        base.extend(over.clone());
    }
    harness_on_host(base, upstream, chrono::FixedOffset::east_opt(0).unwrap())
}

/// The golden harness with the `[opencode]` table `config` as is, on a host at `utc_offset`.
fn harness_on_host(
    config: Value,
    upstream: Option<&str>,
    utc_offset: chrono::FixedOffset,
) -> Opencode {
    let config: OpencodeConfig =
        serde_json::from_value(config).expect("golden config is a valid [opencode] table");
    let prompts = Prompts::load(Some(&golden_dir().join("prompts"))).expect("golden prompts load");
    let collaboration = Collaboration::from_prompts(&prompts, false);
    let profiles = Profiles::load(&[]).expect("built-in profiles");
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset,
    };
    Opencode::new(
        &config,
        &prompts,
        host,
        profiles,
        collaboration,
        upstream.unwrap_or("http://127.0.0.1:8000/v1"),
    )
    .expect("harness builds")
}

fn headers(case: &Value) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in case["headers"].as_object().into_iter().flatten() {
        map.append(
            HeaderName::from_bytes(k.as_bytes()).expect("header name"),
            HeaderValue::from_str(v.as_str().expect("header value is a string"))
                .expect("header value"),
        );
    }
    map
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("serializable")
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("serializable")
}

/// Runs one case; returns a description of every mismatch.
fn run_case(case: &Value) -> Vec<String> {
    let harness = harness(&case["config"], case["upstream"].as_str());
    let body = serde_json::to_vec(&case["request"]).expect("request");
    let request = parse_conversation(&body).expect("golden request parses");
    let facts = ConversationFacts::from_conversation(&request);
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
        .single()
        .expect("date");
    let expect = &case["expect"];
    let built = match harness.build(request, &headers(case), now) {
        Ok(built) => built,
        Err(err) => {
            let Some(want) = expect.get("error") else {
                return vec![format!("unexpected error: {err}")];
            };
            let text = err.to_string();
            let wanted = want["message_contains"].as_str().unwrap_or_default();
            return if text.contains(wanted) {
                Vec::new()
            } else {
                vec![format!("error `{text}` lacks `{wanted}`")]
            };
        }
    };
    if expect.get("error").is_some() {
        return vec!["expected an error, the request was built".to_owned()];
    }
    let actual: Value =
        serde_json::from_slice(&built.body.to_bytes()).expect("upstream body is JSON");
    let mut failures = Vec::new();
    let mut check = |what: &str, want: &Value, got: &Value| {
        // Compact text comparison: key order matters, as on the wire.
        if compact(want) != compact(got) {
            failures.push(format!(
                "{what}:\n  expected {}\n  actual   {}",
                pretty(want),
                pretty(got)
            ));
        }
    };
    if let Some(want) = expect.get("body") {
        check("body", want, &actual);
    }
    if let Some(want) = expect.get("messages") {
        check("messages", want, &actual["messages"]);
    }
    if let Some(want) = expect.get("system") {
        check("system content", want, &actual["messages"][0]["content"]);
    }
    if let Some(want) = expect.get("tool_names") {
        let names: Vec<Value> = actual["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| t["function"]["name"].clone())
                    .collect()
            })
            .unwrap_or_default();
        check("tool names", want, &Value::Array(names));
    }
    if let Some(want) = expect.get("tools") {
        check("tools", want, &actual["tools"]);
    }
    if let Some(want) = expect.get("keys") {
        let keys: Vec<Value> = actual
            .as_object()
            .map(|o| o.keys().map(|k| Value::String(k.clone())).collect())
            .unwrap_or_default();
        check("top-level keys", want, &Value::Array(keys));
    }
    if let Some(want) = expect.get("dropped_tools") {
        let dropped = Value::Array(
            built
                .dropped_tools
                .iter()
                .map(|n| Value::String(n.clone()))
                .collect(),
        );
        check("dropped tools", want, &dropped);
    }
    if let Some(want) = expect.get("facts") {
        let mut got = Map::new();
        got.insert("initial_turn".into(), Value::Bool(facts.initial_turn));
        got.insert(
            "first_user_text".into(),
            Value::String(facts.first_user_text),
        );
        check("facts", want, &Value::Object(got));
    }
    for (key, want) in expect.as_object().into_iter().flatten() {
        if let Some(field) = key.strip_prefix("field:") {
            check(key, want, actual.get(field).unwrap_or(&Value::Null));
        }
    }
    for key in expect["absent_keys"].as_array().into_iter().flatten() {
        let key = key.as_str().expect("absent key name");
        if actual.get(key).is_some() {
            failures.push(format!("key `{key}` must be absent, found {}", actual[key]));
        }
    }
    failures
}

#[test]
fn opencode_golden_cases() {
    let dir = golden_dir().join("opencode");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "golden cases present in {}",
        dir.display()
    );
    let mut report = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read golden");
        let case: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(case["expect"].is_object(), "{}: no expect", file.display());
        let failures = run_case(&case);
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
        "{} of {} golden cases failed:\n\n{}",
        report.len(),
        files.len(),
        report.join("\n\n")
    );
}

/// Without `opencode.timezone` the date line is in the host's UTC offset, as resolved at start-up
/// and handed to the harness: the harness never reads the process's local zone.
#[test]
fn without_a_configured_zone_the_date_is_in_the_hosts_offset() {
    let config = serde_json::json!({"platform": "linux", "identity": "reference", "instructions": "drop", "extra_tools": "drop"});
    let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    // 23:30 UTC on Saturday 29 November 2025: already Sunday one hour east of UTC.
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 23, 30, 0)
        .single()
        .expect("date");
    let date_line = |east_hours: i32| {
        let offset = chrono::FixedOffset::east_opt(east_hours * 3600).unwrap();
        let harness = harness_on_host(config.clone(), None, offset);
        let request = parse_conversation(body).expect("request parses");
        let built = harness
            .build(request, &HeaderMap::new(), now)
            .expect("builds");
        let actual: Value = serde_json::from_slice(&built.body.to_bytes()).expect("JSON");
        let system = actual["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        system
            .lines()
            .find_map(|l| l.trim().strip_prefix("Today's date: "))
            .map(str::to_owned)
    };
    assert_eq!(date_line(1).as_deref(), Some("Sun Nov 30 2025"));
    assert_eq!(date_line(0).as_deref(), Some("Sat Nov 29 2025"));
    assert_eq!(date_line(-5).as_deref(), Some("Sat Nov 29 2025"));
}
