//! Responses tool definitions → Chat Completions functions, and `tool_choice` likewise.
//! A custom (freeform) tool such as Codex's `apply_patch` becomes a function taking
//! `{"input": string}` so a chat upstream can call it; namespaces are flattened; hosted tools have
//! no chat form and are dropped (reported by name).

use serde_json::{Map, Value, json};

use super::request::ToolSpec;
use crate::api::chat::{FunctionDef, ToolDef};

/// What the tool list became.
#[derive(Debug, Default)]
pub struct Converted {
    pub functions: Vec<ToolDef>,
    /// Names of custom tools: their calls are rendered as `custom_tool_call`.
    pub custom: Vec<String>,
    /// Flattened namespace functions: (function name, namespace).
    pub namespaced: Vec<(String, String)>,
    /// Hosted tools (`web_search`, …), by type.
    pub dropped: Vec<String>,
}

/// The schema every custom tool gets as a chat function.
fn custom_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The raw input of the tool (for apply_patch: the whole patch, *** Begin Patch … *** End Patch)."}},
        "required": ["input"],
        "additionalProperties": false
    })
}

pub fn convert(specs: &[ToolSpec]) -> Converted {
    let mut out = Converted::default();
    for spec in specs {
        add(spec, None, &mut out);
    }
    out
}

fn add(spec: &ToolSpec, namespace: Option<&str>, out: &mut Converted) {
    let named = spec.name.as_deref().filter(|n| !n.is_empty());
    match (spec.kind.as_str(), named) {
        ("function", Some(name)) => {
            out.functions.push(function(
                name,
                spec.description.clone(),
                spec.parameters
                    .clone()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                spec.strict,
            ));
            if let Some(namespace) = namespace {
                out.namespaced.push((name.to_owned(), namespace.to_owned()));
            }
        }
        ("custom", Some(name)) => {
            out.functions.push(function(
                name,
                spec.description.clone(),
                custom_parameters(),
                None,
            ));
            out.custom.push(name.to_owned());
        }
        ("namespace", Some(name)) => {
            for inner in &spec.tools {
                add(inner, Some(name), out);
            }
        }
        (kind, name) => out.dropped.push(name.unwrap_or(kind).to_owned()),
    }
}

fn function(
    name: &str,
    description: Option<String>,
    parameters: Value,
    strict: Option<bool>,
) -> ToolDef {
    let mut extra = Map::new();
    if let Some(strict) = strict {
        extra.insert("strict".into(), json!(strict));
    }
    ToolDef {
        kind: "function".into(),
        function: Some(FunctionDef {
            name: name.to_owned(),
            description,
            parameters: Some(parameters),
            extra,
        }),
        name: None,
        extra: Map::new(),
    }
}

/// `"auto"`/`"none"`/`"required"` as they are; `{type:function|custom, name}` → the chat form;
/// anything else (hosted tools, `allowed_tools`) → `None` (the upstream's default).
pub fn tool_choice(choice: &Value) -> Option<Value> {
    match choice {
        Value::String(mode) if matches!(mode.as_str(), "auto" | "none" | "required") => {
            Some(choice.clone())
        }
        Value::Object(object) => {
            let kind = object.get("type").and_then(Value::as_str)?;
            let name = object.get("name").and_then(Value::as_str)?;
            matches!(kind, "function" | "custom")
                .then(|| json!({"type": "function", "function": {"name": name}}))
        }
        _ => None,
    }
}
