//! The bridge's invariant as a property: every tool call delivered to a client validates against
//! that client's own declared JSON schema (checked with `jsonschema`, as the agents check), unless
//! the bridge reports it (`Outcome::Invalid`: logged and counted, never silent). Over generated
//! valid opencode calls, for every built-in profile (the agents' schemas of the client goldens)
//! and for arbitrary client schemas offered under opencode's tool names.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

use harness_proxy::clients::bridge::{Binding, Bridge, Unmatched};
use harness_proxy::clients::profiles::{Profile, Profiles};
use harness_proxy::conversation::mapping::{CallMapper, Outcome};

use crate::client_goldens::{bridge_of, cases, definitions, opencode_tools};

/// A value valid for `schema`, as a model calling opencode's tools makes them: strings from a
/// small alphabet (paths, commands), integers in opencode's ranges but under ten minutes, the
/// values opencode's descriptions name for `status` and `priority`, URLs for `url`.
fn value_for(name: &str, schema: &Value) -> BoxedStrategy<Value> {
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        let branches: Vec<BoxedStrategy<Value>> =
            branches.iter().map(|b| value_for(name, b)).collect();
        return proptest::strategy::Union::new(branches).boxed();
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return proptest::sample::select(options.clone()).boxed();
    }
    let named = |values: &[&str]| {
        let values: Vec<Value> = values.iter().map(|v| json!(v)).collect();
        proptest::sample::select(values).boxed()
    };
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => match name {
            "status" => named(&["pending", "in_progress", "completed", "cancelled"]),
            "priority" => named(&["high", "medium", "low"]),
            "url" => "[a-z]{1,8}"
                .prop_map(|p| json!(format!("https://example.com/{p}")))
                .boxed(),
            _ => "[a-z /._-]{1,12}".prop_map(Value::String).boxed(),
        },
        Some("integer") => {
            let low = schema
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .max(0)
                + i64::from(schema.get("exclusiveMinimum").is_some());
            (low..600_000i64).prop_map(Value::from).boxed()
        }
        Some("number") => (0u32..600_000).prop_map(Value::from).boxed(),
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("null") => Just(Value::Null).boxed(),
        Some("array") => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            proptest::collection::vec(value_for(name, &items), 1..3)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("object") => object_for(schema),
        _ => "[a-z]{1,6}".prop_map(Value::String).boxed(),
    }
}

/// Every required property, each optional one or not.
fn object_for(schema: &Value) -> BoxedStrategy<Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .into_iter()
        .map(|(key, sub)| {
            value_for(&key, &sub)
                .prop_map(move |v| Some((key.clone(), v)))
                .boxed()
        })
        .collect();
    let required: Vec<String> = required.iter().map(|r| (*r).to_owned()).collect();
    (fields, proptest::collection::vec(any::<bool>(), 16))
        .prop_map(move |(fields, keep)| {
            let mut out = Map::new();
            for (i, (key, value)) in fields.into_iter().flatten().enumerate() {
                if required.contains(&key) || keep[i % keep.len()] {
                    out.insert(key, value);
                }
            }
            Value::Object(out)
        })
        .boxed()
}

/// One call delivered by `bridge` for a generated call to `harness_tool`: valid for the client
/// tool's schema, or reported.
fn delivered_is_valid_or_reported(
    bridge: &Bridge,
    harness_tool: &str,
    call: &Value,
) -> Result<Outcome, TestCaseError> {
    let delivered = bridge.to_client(harness_tool, &call.to_string());
    let tool = bridge
        .tools
        .iter()
        .find(|t| t.name == delivered.name)
        .ok_or_else(|| TestCaseError::fail(format!("{} is not offered", delivered.name)))?;
    let args: Value = serde_json::from_str(&delivered.arguments)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    if delivered.outcome != Outcome::Invalid {
        let schema = tool.schema.value().cloned().unwrap_or(json!({}));
        prop_assert!(
            jsonschema::is_valid(&schema, &args),
            "{harness_tool} {call} → {} {args} does not validate against {schema}",
            delivered.name
        );
    }
    Ok(delivered.outcome)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn every_call_a_built_in_profile_delivers_validates_against_the_agents_schema() {
    let profiles = Profiles::load(&[]).unwrap();
    let harness = opencode_tools();
    let opencode: Vec<Value> =
        serde_json::from_str(include_str!("../../prompts/opencode/tools.json")).unwrap();
    for (name, case) in cases() {
        let bridge = bridge_of(&case, &profiles, &harness);
        let targets: Vec<String> = bridge
            .tools
            .iter()
            .filter_map(|t| match &t.binding {
                Binding::Mapped { harness, .. } => Some(harness.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(!targets.is_empty(), "{name}: nothing mapped");
        for target in targets {
            let schema = opencode
                .iter()
                .find(|t| t["function"]["name"] == target.as_str())
                .map(|t| t["function"]["parameters"].clone())
                .unwrap();
            // A client enum opencode leaves free (Gemini CLI's skill names) may refuse a valid
            // opencode call: then it is reported, never sent silently.
            runner(64)
                .run(&object_for(&schema), |call| {
                    prop_assert!(jsonschema::is_valid(&schema, &call), "generated {call}");
                    delivered_is_valid_or_reported(&bridge, &target, &call)?;
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{name}, {target}: {e}"));
        }
    }
}

/// A client schema under an opencode tool's name: some of that tool's parameters and some of
/// its own, each with a JSON type, some required, extra parameters allowed or not.
fn client_schema(harness: &Value) -> BoxedStrategy<Value> {
    let names: Vec<String> = harness["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .chain(["path".to_owned(), "cmd".to_owned(), "extra".to_owned()])
        .collect();
    let types = ["string", "integer", "number", "boolean", "array"];
    let property = (
        proptest::sample::select(names),
        proptest::sample::select(types.to_vec()),
        any::<bool>(),
    );
    (proptest::collection::vec(property, 0..5), any::<bool>())
        .prop_map(|(properties, closed)| {
            let mut props = Map::new();
            let mut required = Vec::new();
            for (name, kind, is_required) in properties {
                let schema = if kind == "array" {
                    json!({"type": "array", "items": {"type": "string"}})
                } else {
                    json!({"type": kind})
                };
                props.insert(name.clone(), schema);
                if is_required && !required.contains(&name) {
                    required.push(name);
                }
            }
            let mut schema = json!({"type": "object", "properties": props, "required": required});
            if closed {
                schema["additionalProperties"] = json!(false);
            }
            schema
        })
        .boxed()
}

#[test]
fn any_client_schema_under_an_opencode_name_gets_only_calls_it_validates() {
    let harness = opencode_tools();
    let opencode: Vec<Value> =
        serde_json::from_str(include_str!("../../prompts/opencode/tools.json")).unwrap();
    let none = std::sync::Arc::new(Profile::none());
    for tool in ["bash", "read", "edit", "write", "glob", "grep", "webfetch"] {
        let schema = opencode
            .iter()
            .find(|t| t["function"]["name"] == tool)
            .map(|t| t["function"]["parameters"].clone())
            .unwrap();
        let strategy = (client_schema(&schema), object_for(&schema));
        let inferences = std::cell::Cell::new(0u32);
        runner(256)
            .run(&strategy, |(client, call)| {
                let defs = definitions(&json!({ tool: client }));
                let bridge = Bridge::new(none.clone(), &defs, harness.clone(), Unmatched::Keep);
                let inferred = matches!(bridge.tools[0].binding, Binding::Mapped { .. });
                inferences.set(inferences.get() + u32::from(inferred));
                let outcome = delivered_is_valid_or_reported(&bridge, tool, &call)?;
                // A call the server streams through unchecked must validate as the model made it.
                if bridge.route(tool) == harness_proxy::conversation::mapping::CallRoute::Native {
                    prop_assert!(
                        jsonschema::is_valid(&client, &call),
                        "{tool}: {call} passed unchecked to {client}"
                    );
                }
                // A schema the inference accepted takes every valid opencode call it has a slot
                // for (or may do without: a label, a "not set"); one it cannot carry whole is
                // reported, never cut down silently.
                // A timeout whose unit the client's schema does not say has no slot (wire.md §3).
                let carried = call.as_object().unwrap().iter().all(|(key, value)| {
                    client["properties"]
                        .get(key)
                        .is_some_and(|slot| key != "timeout" && jsonschema::is_valid(slot, value))
                        || matches!(value, Value::Null | Value::Bool(false))
                        || key == "description"
                        || (tool == "bash" && key == "workdir")
                });
                prop_assert!(
                    !inferred || !carried || outcome != Outcome::Invalid,
                    "{tool}: inferred for {client} yet {call} was refused"
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            inferences.get() > 0,
            "{tool}: no generated schema was inferred"
        );
    }
}

/// A harness's tool set as it ships: `prompts/<harness>/tools.json`, described by its agent's
/// profile.
fn harness_tools(
    harness: &str,
    text: &str,
) -> (
    Vec<Value>,
    std::sync::Arc<harness_proxy::clients::bridge::HarnessTools>,
) {
    let tools: Vec<Value> = serde_json::from_str(text).unwrap();
    let set = harness_proxy::clients::bridge::HarnessTools::new(
        Profiles::built_in(harness),
        tools.iter().map(|t| {
            (
                t["function"]["name"].as_str().unwrap().to_owned(),
                t.pointer("/function/parameters").cloned(),
            )
        }),
    );
    (tools, std::sync::Arc::new(set))
}

/// The dialect layer's invariant for every built-in dialect as a client (the agents' schemas of
/// the client goldens) and as a harness (every harness's shipped tool set): whatever valid call
/// the harness's model makes, the client gets a call that validates against its own schema, or
/// none (reported, and answered upstream by the proxy).
#[test]
fn every_dialect_as_client_and_as_harness_delivers_only_calls_the_client_validates() {
    let profiles = Profiles::load(&[]).unwrap();
    let harnesses = [
        (
            "opencode",
            include_str!("../../prompts/opencode/tools.json"),
        ),
        ("pi", include_str!("../../prompts/pi/tools.json")),
        (
            "qwen-code",
            include_str!("../../prompts/qwen-code/tools.json"),
        ),
        (
            "kimi-code",
            include_str!("../../prompts/kimi-code/tools.json"),
        ),
        (
            "kimi-cli",
            include_str!("../../prompts/kimi-cli/tools.json"),
        ),
        (
            "deepseek-tui",
            include_str!("../../prompts/deepseek-tui/tools.json"),
        ),
        (
            "little-coder",
            include_str!("../../prompts/little-coder/tools.json"),
        ),
    ];
    let mut pairs = 0;
    for (harness, text) in harnesses {
        let (definitions, set) = harness_tools(harness, text);
        for (name, case) in cases() {
            let bridge = bridge_of(&case, &profiles, &set);
            let targets: Vec<String> = bridge
                .tools
                .iter()
                .filter_map(|t| match &t.binding {
                    Binding::Mapped { harness, .. } => Some(harness.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            for target in targets {
                pairs += 1;
                let schema = definitions
                    .iter()
                    .find(|t| t["function"]["name"] == target.as_str())
                    .map(|t| t["function"]["parameters"].clone())
                    .unwrap();
                runner(24)
                    .run(&object_for(&schema), |call| {
                        // A generator that cannot meet every keyword of a harness schema makes
                        // calls the model could not: those are not the harness's.
                        prop_assume!(jsonschema::is_valid(&schema, &call));
                        delivered_is_valid_or_reported(&bridge, &target, &call)?;
                        Ok(())
                    })
                    .unwrap_or_else(|e| panic!("{harness} × {name}, {target}: {e}"));
            }
        }
    }
    assert!(
        pairs > 100,
        "only {pairs} client × harness tool pairs were mapped"
    );
}
