//! Claude Code's request body on each wire, and its headers on the Messages wire
//! (docs/harnesses.md; the spec's claude-code body, headers and Chat form). Keys in the reference's order (serde_json keeps
//! insertion order). Pure.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::{messages, model};
use crate::conversation::{Conversation, Item, Message, Role};
use crate::harness::family::{builder_m, text_of, user_parts};

/// What both wires' bodies are made of.
pub struct Parts<'a> {
    pub conversation: &'a Conversation,
    /// The history in the harness's tools.
    pub items: &'a [Item],
    /// The prompt (the third system block).
    pub prompt: String,
    /// The tools offered, as Chat Completions functions.
    pub tools: Vec<Value>,
}

/// What only the Messages body needs.
pub struct Messages<'a> {
    pub bare: bool,
    /// A sub-agent's request (`super::child`): no thinking, the model's own effort,
    /// `temperature: 1`, no developer text.
    pub child: bool,
    /// The SDK line.
    pub sdk: &'a str,
    /// The date reminder, whole.
    pub reminder: String,
    /// The todo reminders' texts (the full profile's).
    pub todo: Option<super::todo::Texts<'a>>,
    /// The route's prompt-cache scope (the caller and its conversation), the session's seed.
    pub scope: Option<&'a str>,
    /// The tools file's names in its order: Claude Code's order, or a calibrated capture's.
    pub order: Vec<&'a str>,
}

/// Whether a tool of `name` is among the offered functions.
pub fn offers(tools: &[Value], name: &str) -> bool {
    tools.iter().any(|t| t["function"]["name"] == name)
}

/// Over Chat Completions: the prompt as one system message, the history as builder M keeps it
/// (reasoning as `reasoning_content`), the tools as functions, the token limit.
pub fn chat(parts: Parts<'_>) -> Value {
    let conversation = parts.conversation;
    let mut out = vec![json!({"role": "system", "content": parts.prompt})];
    out.extend(builder_m::build(parts.items));
    let mut body = json!({"model": conversation.model, "messages": out, "stream": true});
    if !parts.tools.is_empty() {
        body["tools"] = Value::Array(parts.tools);
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] =
            json!(conversation.options.parallel_tool_calls.unwrap_or(true));
    }
    body["store"] = json!(false);
    body["max_tokens"] = json!(model::max_tokens(&conversation.model));
    body
}

/// Over the Messages wire: the reference's body, field for field.
pub fn messages(parts: &Parts<'_>, setting: &Messages<'_>) -> Value {
    let conversation = parts.conversation;
    let model = conversation.model.as_str();
    let words = first_words(parts.items);
    let system = json!([
        {"type": "text", "text": model::billing_line("message", model, &words)},
        {"type": "text", "text": setting.sdk, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": parts.prompt, "cache_control": {"type": "ephemeral"}},
    ]);
    let skills = if setting.child {
        messages::Skills::Dropped
    } else if setting.bare {
        messages::Skills::Raw
    } else {
        messages::Skills::Listed
    };
    let mut tools: Vec<Value> = parts.tools.iter().map(anthropic_tool).collect();
    tools.sort_by_key(|t| rank(&setting.order, t["name"].as_str().unwrap_or("")));
    let mut turns = messages::build(parts.items, &setting.reminder, skills);
    if let Some(texts) = &setting.todo {
        super::todo::remind(&mut turns, &super::todo::CLAUDE_CODE, &|list| {
            texts.reminder(list)
        });
    }
    let mut body = json!({"model": model, "messages": turns, "system": system, "tools": tools});
    // A child has no session effort of its own: the model's default applies.
    let effort = conversation
        .options
        .reasoning_effort
        .as_deref()
        .filter(|_| !setting.child);
    if let Some(thinking) = model::thinking(model, effort).filter(|_| !setting.child) {
        body["thinking"] = thinking;
        body["context_management"] =
            json!({"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]});
    }
    let effort = if setting.bare {
        Some("high".to_owned())
    } else {
        model::effort(model, effort)
    };
    if let Some(effort) = effort {
        body["output_config"] = json!({"effort": effort});
    }
    let seed = setting
        .scope
        .map_or_else(|| format!("{model}\n{words}"), str::to_owned);
    body["metadata"] = json!({"user_id": model::user_id(&model::session_id(&seed))});
    if setting.child {
        body["temperature"] = json!(1);
    }
    body["max_tokens"] = json!(model::max_tokens(model));
    body["stream"] = json!(true);
    body
}

/// The first text of the first user message that is the user's own words.
fn first_words(items: &[Item]) -> String {
    items
        .iter()
        .find_map(|item| match item {
            Item::Message(Message {
                role: Role::User,
                content,
            }) => user_parts(content),
            _ => None,
        })
        .map(|parts| text_of(&parts[..1.min(parts.len())]))
        .unwrap_or_default()
}

/// A Chat Completions function as an Anthropic tool.
pub(crate) fn anthropic_tool(tool: &Value) -> Value {
    let function = &tool["function"];
    json!({"name": function["name"], "description": function["description"],
        "input_schema": function.get("parameters").cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}))})
}

/// A tool's place in the tools file's order (the built-in file is in Claude Code's order, a
/// calibrated one in the captured order). A tool the file does not hold sorts with the file's
/// last, and the sort is stable: a client tool kept under one of the harness's names takes that
/// tool's place, the client's other tools come after the harness's own.
fn rank(order: &[&str], name: &str) -> usize {
    order
        .iter()
        .position(|n| *n == name)
        .unwrap_or(order.len().saturating_sub(1))
}

/// Claude Code's headers on every Messages request (the session id is added by the caller).
pub fn add_headers(headers: &mut HeaderMap, bare: bool) {
    let beta = if bare {
        "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05,effort-2025-11-24"
    } else {
        "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05,advisor-tool-2026-03-01,effort-2025-11-24"
    };
    let fixed = [
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", beta),
        ("x-stainless-arch", "x64"),
        ("x-stainless-lang", "js"),
        ("x-stainless-os", "Linux"),
        ("x-stainless-package-version", "0.81.0"),
        ("x-stainless-retry-count", "0"),
        ("x-stainless-runtime", "node"),
        ("x-stainless-runtime-version", "v24.3.0"),
        ("x-stainless-timeout", "600"),
        ("anthropic-dangerous-direct-browser-access", "true"),
        ("x-app", "cli"),
        ("user-agent", "claude-cli/2.1.158 (external, sdk-cli)"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    use super::rank;

    /// A calibrated tools file's order is the order sent: a capture's `Write` before `Bash`
    /// stays so, and a client's tool the file does not hold (offered after the harness's own)
    /// stays after them.
    #[test]
    fn tools_go_in_the_tools_file_s_order() {
        let order = ["Write", "Bash", "Read"];
        let mut names = vec!["Bash", "Read", "Write", "Extra"];
        names.sort_by_key(|n| rank(&order, n));
        assert_eq!(names, ["Write", "Bash", "Read", "Extra"]);
        assert_eq!(rank(&[], "Bash"), 0, "no file order: as offered");
    }
}
