//! Responses tool definitions → the conversation's tools, and `tool_choice` likewise. Functions keep
//! their kind, custom (freeform) tools such as Codex's `apply_patch` stay freeform (how they are
//! offered upstream is the harness's business); namespaces are flattened, their functions keeping
//! their own names, and the renderer is told which namespace each came from; hosted tools
//! (`web_search`, …) are not part of the model: dropped, reported by name.

use serde_json::{Value, json};

use super::render::ToolKinds;
use super::request::ToolSpec;
use crate::conversation::{FreeformTool, FunctionTool, ToolChoice, ToolDefinition};

/// What the tool list became.
#[derive(Debug, Default)]
pub struct Tools {
    pub definitions: Vec<ToolDefinition>,
    /// Custom and namespaced tools by name, for rendering calls to them.
    pub kinds: ToolKinds,
    /// Hosted tools by name (or type when unnamed).
    pub dropped: Vec<String>,
}

pub fn convert(specs: Vec<ToolSpec>) -> Tools {
    let mut out = Tools::default();
    for spec in specs {
        add(spec, None, &mut out);
    }
    out
}

fn add(spec: ToolSpec, namespace: Option<&str>, out: &mut Tools) {
    let ToolSpec {
        kind,
        name,
        description,
        parameters,
        strict,
        format,
        tools,
    } = spec;
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        out.dropped.push(kind);
        return;
    };
    match kind.as_str() {
        "function" => {
            if let Some(namespace) = namespace {
                out.kinds
                    .namespaced
                    .push((name.clone(), namespace.to_owned()));
            }
            out.definitions.push(ToolDefinition::Function(FunctionTool {
                name,
                description,
                // A function without a schema takes no arguments.
                parameters: Some(
                    parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                ),
                strict,
                ..FunctionTool::default()
            }));
        }
        "custom" => {
            out.kinds.custom.push(name.clone());
            out.definitions.push(ToolDefinition::Freeform(FreeformTool {
                name,
                description,
                format,
            }));
        }
        "namespace" => {
            for inner in tools {
                add(inner, Some(&name), out);
            }
        }
        _ => out.dropped.push(name),
    }
}

/// `"auto"`/`"none"`/`"required"` as they are; `{type: function|custom, name}` → that tool; anything
/// else (hosted tools, `allowed_tools`) → `None`: the upstream's default, as a Chat Completions
/// upstream has no form for it.
pub fn tool_choice(choice: &Value) -> Option<ToolChoice> {
    match choice {
        Value::String(mode) => match mode.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            _ => None,
        },
        Value::Object(object) => {
            let kind = object.get("type").and_then(Value::as_str)?;
            let name = object.get("name").and_then(Value::as_str)?;
            matches!(kind, "function" | "custom").then(|| ToolChoice::Tool(name.to_owned()))
        }
        _ => None,
    }
}
