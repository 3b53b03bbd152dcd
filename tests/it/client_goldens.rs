//! Per-profile goldens of the tool bridge (`tests/golden/clients/*.json`, written by hand from the
//! agents' captured requests): the agent is detected from its headers and tools; its tools are
//! mapped to opencode's, kept or dropped as the case says; the upstream's calls reach it in its
//! own terms and validate against its own schema; its history calls and results reach the
//! upstream in opencode's (through the neutral capabilities). Then the bridge's invariant as a property (`schema_props`).

use std::path::Path;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use harness_proxy::clients::bridge::{Binding, Bridge, HarnessTools, Unmatched};
use harness_proxy::clients::profiles::Profiles;
use harness_proxy::conversation::mapping::{CallMapper, Outcome};
use harness_proxy::conversation::{FunctionTool, ToolDefinition};

pub(crate) fn cases() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/clients");
    let mut cases: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).expect("golden JSON"))
        })
        .collect();
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    cases
}

/// opencode's tool set as the harness ships it (prompts/opencode/tools.json).
pub(crate) fn opencode_tools() -> Arc<HarnessTools> {
    let text = include_str!("../../prompts/opencode/tools.json");
    let tools: Vec<Value> = serde_json::from_str(text).expect("tools.json");
    Arc::new(HarnessTools::new(
        Profiles::built_in("opencode"),
        tools.iter().map(|t| {
            (
                t["function"]["name"].as_str().unwrap().to_owned(),
                t.pointer("/function/parameters").cloned(),
            )
        }),
    ))
}

pub(crate) fn definitions(tools: &Value) -> Vec<ToolDefinition> {
    tools
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, schema)| {
            ToolDefinition::Function(FunctionTool {
                name: name.clone(),
                parameters: Some(schema.clone()),
                ..FunctionTool::default()
            })
        })
        .collect()
}

fn headers(case: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (k, v) in case["headers"].as_object().unwrap() {
        headers.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v.as_str().unwrap()).unwrap(),
        );
    }
    headers
}

pub(crate) fn bridge_of(case: &Value, profiles: &Profiles, harness: &Arc<HarnessTools>) -> Bridge {
    let defs = definitions(&case["tools"]);
    let profile = profiles.detect(&headers(case), None, &defs).unwrap();
    Bridge::new(profile, &defs, harness.clone(), Unmatched::Keep)
}

fn pair(v: &Value) -> (String, Value) {
    (v[0].as_str().unwrap().to_owned(), v[1].clone())
}

fn check_case(case: &Value, profiles: &Profiles, harness: &Arc<HarnessTools>) -> Vec<String> {
    let mut errors = Vec::new();
    let bridge = bridge_of(case, profiles, harness);
    let mut expect = |ok: bool, what: String| {
        if !ok {
            errors.push(what);
        }
    };
    expect(
        bridge.profile.name == case["profile"],
        format!(
            "profile {} (expected {})",
            bridge.profile.name, case["profile"]
        ),
    );
    let mut mapped = Map::new();
    for tool in &bridge.tools {
        if let Binding::Mapped { harness, .. } = &tool.binding {
            mapped.insert(tool.name.clone(), serde_json::json!(harness));
        }
    }
    expect(
        Value::Object(mapped.clone()) == case["mapped"],
        format!("mapped {mapped:?}"),
    );
    expect(
        serde_json::json!(bridge.kept()) == case["kept"],
        format!("kept {:?}", bridge.kept()),
    );
    expect(
        serde_json::json!(bridge.dropped()) == case["dropped"],
        format!("dropped {:?}", bridge.dropped()),
    );
    for call in case["calls"].as_array().unwrap() {
        let (name, args) = pair(&call["upstream"]);
        let delivered = bridge.to_client(&name, &args.to_string());
        // A call the client's tool cannot carry whole (an argument with no slot that matters):
        // reported, never delivered cut down.
        if call["invalid"] == true {
            expect(
                delivered.outcome == Outcome::Invalid,
                format!(
                    "call {name} {args} → {:?}, expected invalid",
                    delivered.outcome
                ),
            );
            continue;
        }
        let got: Value = serde_json::from_str(&delivered.arguments).unwrap();
        let (want_name, want_args) = pair(&call["client"]);
        expect(
            delivered.name == want_name && got == want_args,
            format!("call {name} {args} → {} {got}", delivered.name),
        );
        let schema = &case["tools"][&want_name];
        expect(
            delivered.outcome != Outcome::Invalid && jsonschema::is_valid(schema, &got),
            format!(
                "call {name} → {got} does not validate ({:?})",
                delivered.outcome
            ),
        );
    }
    for item in case["history"].as_array().unwrap() {
        let (name, args) = pair(&item["client"]);
        let calls: Vec<Value> = bridge
            .history_calls(&name, &args.to_string())
            .into_iter()
            .map(|(n, a)| serde_json::json!([n, serde_json::from_str::<Value>(&a).unwrap()]))
            .collect();
        expect(
            Value::Array(calls.clone()) == item["upstream"],
            format!("history {name} → {calls:?}"),
        );
    }
    for result in case["results"].as_array().unwrap() {
        let tool = result["tool"].as_str().unwrap();
        let text = result["text"].as_str().unwrap();
        let got = bridge.history_output(tool, None, text);
        expect(
            got == result["upstream"].as_str().unwrap(),
            format!("result of {tool}: {got:?}"),
        );
    }
    errors
}

#[test]
fn every_profile_maps_its_agents_tools_calls_and_results() {
    let profiles = Profiles::load(&[]).unwrap();
    let harness = opencode_tools();
    let cases = cases();
    assert!(cases.len() >= 10, "{} cases", cases.len());
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|(name, case)| {
            let errors = check_case(case, &profiles, &harness);
            (!errors.is_empty()).then(|| format!("{name}:\n  {}", errors.join("\n  ")))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// A bridge is its own `Arc<dyn CallMapper>` in the server; here it is called directly.
#[test]
fn a_call_to_a_tool_the_request_did_not_offer_is_not_renamed() {
    let profiles = Profiles::load(&[]).unwrap();
    let harness = opencode_tools();
    let defs = definitions(&serde_json::json!({
        "Bash": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    }));
    let profile = profiles.named("claude-code").unwrap();
    let bridge: Arc<dyn CallMapper> =
        Arc::new(Bridge::new(profile, &defs, harness, Unmatched::Keep));
    // Claude Code's profile has `Write`, but this request offered none: no rename.
    assert_eq!(
        bridge.route("write"),
        harness_proxy::conversation::mapping::CallRoute::Unmapped
    );
}
