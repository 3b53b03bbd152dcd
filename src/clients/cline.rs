//! The `cline` profile's structural converters (Cline CLI 3.0, `profiles/cline.toml` names
//! them): Cline's tools take lists (`commands[]`, `files[]`, `queries[]`, `requests[]`) where
//! opencode's take one, and one `editor` both edits and writes. A list of one converts either
//! way; a longer one from the history is joined where that keeps its meaning (commands run with
//! `&&`, queries as one regex alternation), else it stays as Cline sent it. Pure.
//!
//! Owns: Cline's shapes. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;

fn strings(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}

/// `run_commands {commands: [..]}` → `bash {command}`, the commands joined with `&&`.
pub(crate) fn commands_to_bash(args: &Map<String, Value>) -> Option<Value> {
    let commands = strings(args.get("commands")?)?;
    (!commands.is_empty()).then(|| json!({"command": commands.join(" && ")}))
}

/// `bash {command, workdir?}` → `run_commands {commands: [command]}` (a `workdir` as a `cd`).
pub(crate) fn bash_to_commands(args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("command")?.as_str()?;
    let command = match args.get("workdir").and_then(Value::as_str) {
        Some(dir) if !dir.is_empty() => format!("cd {} && {command}", shlex::try_quote(dir).ok()?),
        _ => command.to_owned(),
    };
    Some(json!({ "commands": [command] }))
}

/// `read_files {files: [{path, start_line?, end_line?}]}` with one file → `read`.
pub(crate) fn files_to_read(args: &Map<String, Value>) -> Option<Value> {
    let [file] = args.get("files")?.as_array()?.as_slice() else {
        return None;
    };
    let mut lines = Map::new();
    lines.insert("file_path".into(), file.get("path")?.clone());
    for key in ["start_line", "end_line"] {
        if let Some(v) = file.get(key) {
            lines.insert(key.into(), v.clone());
        }
    }
    super::gemini_cli::lines_to_read(&lines)
}

/// `read {filePath, offset?, limit?}` → `read_files {files: [{path, start_line?, end_line?}]}`.
pub(crate) fn read_to_files(args: &Map<String, Value>) -> Option<Value> {
    let Value::Object(mut file) = super::gemini_cli::read_to_lines(args)? else {
        return None;
    };
    let path = file.remove("file_path")?;
    file.insert("path".into(), path);
    Some(json!({ "files": [Value::Object(file)] }))
}

/// `editor {path, old_text?, new_text, insert_line?}` → `edit` (with `old_text`) or `write`
/// (without); an insertion at a line has no opencode counterpart.
pub(crate) fn editor_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    editor_call(args).map(|call| vec![call])
}

fn editor_call(args: &Map<String, Value>) -> Option<(Capability, Value)> {
    if args.get("insert_line").is_some_and(|l| !l.is_null()) {
        return None;
    }
    let path = args.get("path")?.clone();
    let new_text = args.get("new_text")?.clone();
    Some(match args.get("old_text").filter(|o| !o.is_null()) {
        Some(old) => (
            Capability::Edit,
            json!({"filePath": path, "oldString": old, "newString": new_text}),
        ),
        None => (
            Capability::Write,
            json!({"filePath": path, "content": new_text}),
        ),
    })
}

/// A neutral edit or write → `editor`.
pub(crate) fn neutral_to_editor(
    capability: Capability,
    args: &Map<String, Value>,
) -> Option<Value> {
    let path = args.get("filePath")?.clone();
    match capability {
        Capability::Edit => Some(
            json!({"path": path, "old_text": args.get("oldString")?.clone(),
            "new_text": args.get("newString")?.clone()}),
        ),
        Capability::Write => Some(json!({"path": path, "new_text": args.get("content")?.clone()})),
        _ => None,
    }
}

/// `search_codebase {queries: [..]}` → `grep {pattern}`, the queries as one alternation.
pub(crate) fn queries_to_grep(args: &Map<String, Value>) -> Option<Value> {
    let queries = strings(args.get("queries")?)?;
    (!queries.is_empty()).then(|| json!({"pattern": queries.join("|")}))
}

/// `grep {pattern, …}` → `search_codebase {queries: [pattern]}`.
pub(crate) fn grep_to_queries(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"queries": [args.get("pattern")?.as_str()?]}))
}

/// `fetch_web_content {requests: [{url, prompt}]}` with one request → `webfetch {url, format}`.
pub(crate) fn requests_to_webfetch(args: &Map<String, Value>) -> Option<Value> {
    let [request] = args.get("requests")?.as_array()?.as_slice() else {
        return None;
    };
    Some(json!({"url": request.get("url")?.clone(), "format": "markdown"}))
}

/// `webfetch {url}` → `fetch_web_content {requests: [{url, prompt}]}` asking for the whole page.
pub(crate) fn webfetch_to_requests(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"requests": [{"url": args.get("url")?.clone(),
        "prompt": "Return the full content of the page as markdown."}]}))
}
/// `run_commands` → the neutral shell.
pub(crate) fn commands_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Shell, commands_to_bash(args))
}

pub(crate) fn neutral_to_commands(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    bash_to_commands(args)
}

/// `read_files` → the neutral read.
pub(crate) fn files_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Read, files_to_read(args))
}

pub(crate) fn neutral_to_files(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    read_to_files(args)
}

/// `search_codebase` → the neutral grep.
pub(crate) fn queries_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Grep, queries_to_grep(args))
}

pub(crate) fn neutral_to_queries(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    grep_to_queries(args)
}

/// `fetch_web_content` → the neutral fetch.
pub(crate) fn requests_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Fetch, requests_to_webfetch(args))
}

pub(crate) fn neutral_to_requests(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    webfetch_to_requests(args)
}
