//! Golden cases for the harnesses with a Messages form (`claude-code`, `claude-code-bare`,
//! `zcode`) on both upstream wires: `tests/golden/claude-code/*.json`. A case names its harness and wire, gives a Chat Completions
//! request and the proxy's headers, and says what the upstream body must be: its top-level keys
//! in order, its messages exactly, its tools' names in order (Anthropic's `name` or a function's),
//! and other fields exactly. The texts come from the tiny prompts of `tests/golden/prompts/`, and
//! every expected value is written by hand from the claude-code vectors of the spec's harnesses.md and rules (the hashes
//! computed from their rules), never pasted from the proxy's output.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use chrono::TimeZone;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::{Config, Wire};
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::harness::{HarnessRequest, Registry, Setup};
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::chat::request::parse_conversation;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn registry(wire: Wire) -> Registry {
    let mut config = Config::default();
    config.upstream.wire = wire;
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

fn upstream_body(registry: &Registry, case: &Value) -> Value {
    let body = Bytes::from(serde_json::to_vec(&case["request"]).expect("request"));
    let conversation = parse_conversation(&body).expect("request parses");
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
        .single()
        .expect("date");
    let harness = case["harness"].as_str().expect("harness");
    let headers = headers(case);
    let prepared = registry
        .get(harness)
        .unwrap_or_else(|| panic!("harness {harness}"))
        .prepare(HarnessRequest {
            conversation,
            chat_body: Some(&body),
            headers: &headers,
            now,
        })
        .expect("the harness rebuilds the request");
    serde_json::from_slice(&prepared.upstream_body.to_bytes()).expect("upstream JSON")
}

fn run_case(body: &Value, expect: &Value) -> Vec<String> {
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
        .map(|t| t.get("name").unwrap_or(&t["function"]["name"]).clone())
        .collect();
    check("tool names", expect.get("tool_names"), Value::Array(names));
    for (field, want) in expect["fields"].as_object().into_iter().flatten() {
        check(field, Some(want), body[field].clone());
    }
    failures
}

#[test]
fn the_messages_form_harnesses_match_their_golden_cases_on_both_wires() {
    let registries = [
        ("chat", registry(Wire::Chat)),
        ("messages", registry(Wire::Messages)),
    ];
    let dir = golden_dir().join("claude-code");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut seen = Vec::new();
    let mut report = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read golden");
        let case: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let wire = case["wire"].as_str().expect("wire");
        let (_, registry) = registries
            .iter()
            .find(|(name, _)| *name == wire)
            .expect("a known wire");
        seen.push(format!("{} {wire}", case["harness"].as_str().unwrap_or("")));
        let failures = run_case(&upstream_body(registry, &case), &case["expect"]);
        if !failures.is_empty() {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            report.push(format!("{name}\n{}", failures.join("\n")));
        }
    }
    for pair in [
        "claude-code chat",
        "claude-code messages",
        "claude-code-bare chat",
        "claude-code-bare messages",
        "zcode chat",
        "zcode messages",
    ] {
        assert!(seen.iter().any(|s| s == pair), "no golden case for {pair}");
    }
    assert!(report.is_empty(), "{}", report.join("\n\n"));
}

#[test]
fn the_full_profile_offers_claude_code_s_27_tools_in_its_order_when_every_tool_is_offered() {
    let mut config = Config::default();
    config.upstream.wire = Wire::Messages;
    config.opencode.tools = harness_proxy::config::ToolsPolicy::Reference;
    let prompts = Prompts::load(None).expect("built-in prompts");
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).expect("UTC"),
    };
    let registry = Registry::build(&Setup {
        config: &config,
        prompts: &prompts,
        host,
        profiles: Profiles::load(&[]).expect("profiles"),
    })
    .expect("builds");
    let case = serde_json::json!({"harness": "claude-code", "headers": {},
        "request": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}});
    let body = upstream_body(&registry, &case);
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The spec's build_tools_matches_expected_claude_core_surface, in rank order.
    assert_eq!(
        names,
        [
            "Agent",
            "AskUserQuestion",
            "Bash",
            "CronCreate",
            "CronDelete",
            "CronList",
            "Edit",
            "EnterPlanMode",
            "EnterWorktree",
            "ExitPlanMode",
            "ExitWorktree",
            "Glob",
            "Grep",
            "NotebookEdit",
            "Read",
            "ScheduleWakeup",
            "Skill",
            "TaskCreate",
            "TaskGet",
            "TaskList",
            "TaskOutput",
            "TaskStop",
            "TaskUpdate",
            "WebFetch",
            "WebSearch",
            "Workflow",
            "Write"
        ]
    );
    let bash = &body["tools"][2];
    assert_eq!(
        bash["input_schema"]["required"],
        serde_json::json!(["command"])
    );
    assert_eq!(bash["input_schema"]["additionalProperties"], false);
}
