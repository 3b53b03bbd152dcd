//! The `gemini-cli` profile's structural converters (Gemini CLI 0.61, `profiles/gemini-cli.toml`
//! holds its renames; Qwen Code, a fork, shares the shell result block in `profiles::results`):
//! `read_file`'s line range ↔ the neutral offset and limit, `write_todos` ↔ the neutral todos, and
//! `web_fetch`, which takes one prompt with the URL inside it; an `invoke_agent` result is its
//! sub-agent's structured output after a status header (`agent_result`). Pure.
//!
//! Owns: Gemini CLI's shapes. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;

/// `read_file {file_path, start_line?, end_line?}` (1-based, inclusive) → `read {filePath,
/// offset?, limit?}` (offset 1-based).
pub(crate) fn lines_to_read(args: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    out.insert("filePath".into(), args.get("file_path")?.clone());
    let start = args.get("start_line").and_then(Value::as_u64);
    let end = args.get("end_line").and_then(Value::as_u64);
    if let Some(start) = start {
        out.insert("offset".into(), json!(start));
    }
    if let Some(end) = end {
        let start = start.unwrap_or(1);
        out.insert("limit".into(), json!(end.saturating_sub(start) + 1));
    }
    Some(Value::Object(out))
}

/// `read {filePath, offset?, limit?}` → `read_file {file_path, start_line?, end_line?}`.
pub(crate) fn read_to_lines(args: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    out.insert("file_path".into(), args.get("filePath")?.clone());
    let offset = args
        .get("offset")
        .and_then(Value::as_u64)
        .filter(|o| *o > 0);
    if let Some(offset) = offset {
        out.insert("start_line".into(), json!(offset));
    }
    if let Some(limit) = args.get("limit").and_then(Value::as_u64).filter(|l| *l > 0) {
        out.insert("end_line".into(), json!(offset.unwrap_or(1) + limit - 1));
    }
    Some(Value::Object(out))
}

/// `write_todos {todos: [{description, status}]}` → `todowrite {todos: [{content, status,
/// priority}]}`: `blocked`, which opencode lacks, reads as `pending`.
pub(crate) fn todos_in(args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|todo| {
            let status = match todo.get("status").and_then(Value::as_str)? {
                "blocked" => "pending",
                other => other,
            };
            Some(
                json!({"content": todo.get("description")?.clone(), "status": status,
                "priority": "medium"}),
            )
        })
        .collect::<Option<_>>()?;
    Some(json!({ "todos": todos }))
}

/// A todo status in a client's set: as it is when the client has it, else `pending` (opencode's
/// status is free text; its four documented values are Gemini CLI's).
pub(crate) fn status_in(todo: &Value, allowed: &[&str]) -> Value {
    let status = todo
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("pending");
    match status {
        "cancelled" if !allowed.contains(&"cancelled") => json!("completed"),
        s if allowed.contains(&s) => json!(s),
        _ => json!("pending"),
    }
}

const GEMINI_STATUSES: [&str; 5] = [
    "pending",
    "in_progress",
    "completed",
    "cancelled",
    "blocked",
];

/// `todowrite`'s todos → `write_todos`'s.
pub(crate) fn todos_to_client(args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|todo| {
            Some(json!({"description": todo.get("content")?.clone(),
                "status": status_in(todo, &GEMINI_STATUSES)}))
        })
        .collect::<Option<_>>()?;
    Some(json!({ "todos": todos }))
}

/// Qwen Code's `todo_write {todos: [{content, status, id}]}` → `todowrite` (Qwen Code, a fork
/// of Gemini CLI, keeps its todos as Claude Code does).
pub(crate) fn qwen_todos_in(args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|todo| {
            Some(json!({"content": todo.get("content")?.clone(),
                "status": todo.get("status")?.clone(), "priority": "medium"}))
        })
        .collect::<Option<_>>()?;
    Some(json!({ "todos": todos }))
}

/// `todowrite`'s todos → Qwen Code's: ids by position, its three statuses.
pub(crate) fn todos_to_qwen(args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .enumerate()
        .map(|(i, todo)| {
            Some(json!({"content": todo.get("content")?.clone(),
                "status": status_in(todo, &["pending", "in_progress", "completed"]),
                "id": (i + 1).to_string()}))
        })
        .collect::<Option<_>>()?;
    Some(json!({ "todos": todos }))
}

/// `web_fetch {prompt}` → `webfetch {url, format}`: the first http(s) URL of the prompt.
pub(crate) fn prompt_to_webfetch(args: &Map<String, Value>) -> Option<Value> {
    let prompt = args.get("prompt")?.as_str()?;
    let url = prompt
        .split_whitespace()
        .find(|w| w.starts_with("https://") || w.starts_with("http://"))?
        .trim_end_matches(['.', ',', ')', '"', '\'']);
    Some(json!({"url": url, "format": "markdown"}))
}

/// `webfetch {url}` → `web_fetch {prompt}` asking for the whole page, opencode's meaning.
pub(crate) fn webfetch_to_prompt(args: &Map<String, Value>) -> Option<Value> {
    let url = args.get("url")?.as_str()?;
    Some(json!({"prompt": format!("Return the full content of {url} as markdown.")}))
}
/// `read_file`'s line range → the neutral read.
pub(crate) fn lines_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Read, lines_to_read(args))
}

pub(crate) fn neutral_to_lines(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    read_to_lines(args)
}

/// `write_todos` → the neutral todo list.
pub(crate) fn todos_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Todo, todos_in(args))
}

pub(crate) fn neutral_to_todos(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    todos_to_client(args)
}

/// `web_fetch {prompt}` → the neutral fetch.
pub(crate) fn prompt_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Fetch, prompt_to_webfetch(args))
}

pub(crate) fn neutral_to_prompt(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    webfetch_to_prompt(args)
}

/// Qwen Code's `todo_write` → the neutral todo list.
pub(crate) fn qwen_todos_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Todo, qwen_todos_in(args))
}

pub(crate) fn neutral_to_qwen_todos(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    todos_to_qwen(args)
}

/// How an `invoke_agent` result that reached its goal opens (0.61, captured), before the
/// sub-agent's output as pretty JSON.
const AGENT_FINISHED: &str = "Subagent '";
const AGENT_GOAL: &str = " finished.\nTermination Reason: GOAL\nResult:\n";

/// An `invoke_agent` result → the sub-agent's answer: the `response` of its output (the
/// generalist's), or the `SummaryOfFindings` of a report (the codebase investigator's), else the
/// output's JSON. A sub-agent that did not reach its goal is not read: its status is the result.
pub fn agent_result(text: &str) -> Option<String> {
    let rest = text.strip_prefix(AGENT_FINISHED)?;
    let (_, output) = rest.split_once(AGENT_GOAL)?;
    let value: Value = serde_json::from_str(output).ok()?;
    let answer = ["response", "SummaryOfFindings"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str));
    Some(match answer {
        Some(answer) => answer.to_owned(),
        None => output.trim().to_owned(),
    })
}

#[cfg(test)]
mod agent_tests {
    use super::*;

    #[test]
    fn an_invoke_agent_result_is_the_sub_agent_s_response() {
        let text = "Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{\n  \"response\": \"Found: a.txt\\n  - b.txt\"\n}";
        assert_eq!(
            agent_result(text).as_deref(),
            Some("Found: a.txt\n  - b.txt")
        );
        let report = "Subagent 'codebase_investigator' finished.\nTermination Reason: GOAL\nResult:\n{\"SummaryOfFindings\": \"auth lives in a.rs\", \"ExplorationTrace\": []}";
        assert_eq!(agent_result(report).as_deref(), Some("auth lives in a.rs"));
        let failed = "Subagent 'generalist' finished.\nTermination Reason: ERROR_NO_COMPLETE_TASK_CALL\nResult:\nAgent stopped";
        assert_eq!(agent_result(failed), None);
    }
}
