//! Claude Code's structural converters (Claude Code 2.1.x; `profiles/claude-code.toml` holds its
//! renames): `Bash` has no working directory (a neutral `workdir` becomes a `cd`), `TodoWrite`
//! keeps an `activeForm` and no priority, `WebFetch` runs the page through a prompt; an `Agent`
//! result is its sub-agent's report inside Claude Code's hand-back frame (`agent_report`). Pure.
//!
//! Owns: Claude Code's shapes. Must not: rename anything a data file can.

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;

/// Claude Code `Bash {command, timeout, description, run_in_background, dangerouslyDisableSandbox}`
/// → the neutral shell `{command, timeout, description}`.
pub(super) fn bash_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Shell, bash_in(args))
}

fn bash_in(args: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    out.insert("command".into(), args.get("command")?.clone());
    for key in ["timeout", "description"] {
        if let Some(value) = args.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    Some(Value::Object(out))
}

/// The neutral shell `{command, timeout, workdir, description}` → Claude Code `Bash`, which has
/// no working directory: a `workdir` becomes a `cd` in front of the command.
pub(super) fn neutral_to_bash(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("command")?.as_str()?;
    let command = match args.get("workdir").and_then(Value::as_str) {
        Some(dir) if !dir.is_empty() => {
            format!("cd {} && {command}", shlex::try_quote(dir).ok()?)
        }
        _ => command.to_owned(),
    };
    let mut out = Map::new();
    out.insert("command".into(), Value::String(command));
    for key in ["timeout", "description"] {
        if let Some(value) = args.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    Some(Value::Object(out))
}

/// `TodoWrite {todos: [{content, status, activeForm}]}` → `todowrite {todos: [{content, status,
/// priority, id}]}` (priority `medium`, ids by position: Claude Code's todos have neither).
pub(super) fn todos_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Todo, todos_in(args))
}

fn todos_in(args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |k: &str| item.get(k).cloned().unwrap_or_else(|| json!(""));
            json!({"content": field("content"), "status": field("status"),
                "priority": item.get("priority").filter(|p| p.is_string()).cloned().unwrap_or_else(|| json!("medium")),
                "id": (i + 1).to_string()})
        })
        .collect();
    Some(json!({ "todos": todos }))
}

/// opencode's todos → Claude Code's: `activeForm` is the content (opencode has no separate
/// wording), and `cancelled`, which Claude Code lacks, reads as `completed`.
pub(super) fn neutral_to_todos(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    let todos: Vec<Value> = args
        .get("todos")?
        .as_array()?
        .iter()
        .map(|item| {
            let content = item.get("content").cloned().unwrap_or_else(|| json!(""));
            let status =
                super::gemini_cli::status_in(item, &["pending", "in_progress", "completed"]);
            json!({"content": content, "status": status, "activeForm": content})
        })
        .collect();
    Some(json!({ "todos": todos }))
}

/// `WebFetch {url, prompt}` → `webfetch {url, format: "markdown"}` (opencode returns the page,
/// the model reads it itself).
pub(super) fn webfetch_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Fetch, webfetch_in(args))
}

fn webfetch_in(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"url": args.get("url")?.clone(), "format": "markdown"}))
}

/// `webfetch {url, format}` → `WebFetch {url, prompt}`: Claude Code's tool needs a prompt to
/// run the page through; asking for the whole content keeps opencode's meaning.
pub(super) fn neutral_to_webfetch(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"url": args.get("url")?.clone(),
        "prompt": "Return the full content of the page as markdown."}))
}

/// Where Claude Code's frame around a sub-agent's report (2.1.332, captured) ends, and where the
/// lines after the report begin.
const REPORT_FOLLOWS: &str = "The report follows:\n";
const AGENT_ID_LINE: &str = "\nagentId: ";

/// An `Agent` result (a foreground sub-agent's hand-back: a frame, the report with every line
/// indented by two spaces, then its `agentId:` and usage lines) → the report as the sub-agent
/// wrote it. Another form (an older version's plain text) is not read.
pub fn agent_report(text: &str) -> Option<String> {
    let start = text.find(REPORT_FOLLOWS)? + REPORT_FOLLOWS.len();
    let end = start + text[start..].rfind(AGENT_ID_LINE)?;
    let report = text[start..end]
        .split('\n')
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    Some(report)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::agent_report;

    use super::super::profiles::{Profile, Profiles};

    fn claude() -> Arc<Profile> {
        Profiles::built_in("claude-code")
    }

    #[test]
    fn bash_drops_claude_extras_and_workdir_becomes_cd() {
        let (name, args) = claude().neutral(
            "Bash",
            r#"{"command":"ls","timeout":1000,"description":"List","run_in_background":false,"dangerouslyDisableSandbox":true}"#,
        );
        assert_eq!(
            (name.as_str(), args.as_str()),
            (
                "shell",
                r#"{"command":"ls","timeout":1000,"description":"List"}"#
            )
        );
        let back = claude().client(
            "bash",
            r#"{"command":"make test","workdir":"/my repo","description":"Test"}"#,
            &["Bash".to_owned()],
        );
        assert_eq!(
            back,
            Some((
                "Bash".into(),
                r#"{"command":"cd '/my repo' && make test","description":"Test"}"#.into()
            ))
        );
    }

    #[test]
    fn file_tools_rename_snake_case_to_camel_case_both_ways() {
        assert_eq!(
            claude().neutral(
                "Edit",
                r#"{"file_path":"/a.rs","old_string":"x","new_string":"y","replace_all":true}"#
            ),
            (
                "edit".into(),
                r#"{"filePath":"/a.rs","oldString":"x","newString":"y","replaceAll":true}"#.into()
            )
        );
        assert_eq!(
            claude().neutral(
                "Read",
                r#"{"file_path":"/a.rs","offset":10,"limit":5,"pages":"1"}"#
            ),
            (
                "read".into(),
                r#"{"filePath":"/a.rs","offset":10,"limit":5}"#.into()
            )
        );
        assert_eq!(
            claude().client(
                "write",
                r#"{"content":"hi","filePath":"/b.txt"}"#,
                &["Write".to_owned()]
            ),
            Some((
                "Write".into(),
                r#"{"content":"hi","file_path":"/b.txt"}"#.into()
            ))
        );
        assert_eq!(
            claude().client(
                "grep",
                r#"{"pattern":"fn main","include":"*.rs"}"#,
                &["Grep".to_owned()]
            ),
            Some((
                "Grep".into(),
                r#"{"pattern":"fn main","glob":"*.rs"}"#.into()
            ))
        );
    }

    #[test]
    fn todos_gain_priority_and_ids_and_lose_them_again() {
        let (name, args) = claude().neutral(
            "TodoWrite",
            r#"{"todos":[{"content":"Fix bug","status":"in_progress","activeForm":"Fixing bug"}]}"#,
        );
        assert_eq!(name, "todo");
        assert_eq!(
            args,
            r#"{"todos":[{"content":"Fix bug","status":"in_progress","priority":"medium","id":"1"}]}"#
        );
        let back = claude().client(
            "todowrite",
            r#"{"todos":[{"content":"A","status":"cancelled","priority":"high","id":"x"}]}"#,
            &[],
        );
        assert_eq!(
            back,
            Some((
                "TodoWrite".into(),
                r#"{"todos":[{"content":"A","status":"completed","activeForm":"A"}]}"#.into()
            ))
        );
    }

    #[test]
    fn webfetch_and_task_follow_what_the_client_offered() {
        assert_eq!(
            claude().neutral(
                "WebFetch",
                r#"{"url":"https://x.test","prompt":"summarise"}"#
            ),
            (
                "fetch".into(),
                r#"{"url":"https://x.test","format":"markdown"}"#.into()
            )
        );
        let task = r#"{"description":"Find","prompt":"Look","subagent_type":"general"}"#;
        // A harness's kind of agent is not Claude Code's: its general agent runs, in the
        // foreground (the answer is the call's result).
        assert_eq!(
            claude().client("task", task, &["Agent".to_owned()]),
            Some((
                "Agent".into(),
                r#"{"description":"Find","prompt":"Look","run_in_background":false}"#.into()
            ))
        );
        assert_eq!(
            claude().client("task", task, &["Task".to_owned()]),
            Some((
                "Task".into(),
                r#"{"description":"Find","prompt":"Look","subagent_type":"general-purpose"}"#
                    .into()
            ))
        );
        // Resuming a task by its id has no slot in Claude Code's tool: not expressible, never
        // sent as a fresh task with the id cut away.
        let resume =
            r#"{"description":"Find","prompt":"Look","subagent_type":"general","task_id":"t"}"#;
        assert_eq!(claude().client("task", resume, &["Task".to_owned()]), None);
    }

    #[test]
    fn an_agent_result_is_the_report_unframed_and_unindented() {
        let text = concat!(
            "  <tools-used-before-summary>Bash</tools-used-before-summary>\n  \n",
            "[Subagent hand-back] The text below is the final report of a subagent. The report follows:\n",
            "  Found: README.md, notes.txt\n  Both are plain text files.\n  \n    - README.md (indented line)\n  - notes.txt\n",
            "agentId: ab6f565526196b3e9 (use SendMessage with to: 'ab6f565526196b3e9' to continue this agent)\n",
            "<usage>subagent_tokens: 15\ntool_uses: 1</usage>\n",
            "<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>"
        );
        assert_eq!(
            agent_report(text).as_deref(),
            Some(
                "Found: README.md, notes.txt\nBoth are plain text files.\n\n  - README.md (indented line)\n- notes.txt"
            )
        );
        assert_eq!(agent_report("Found: a.txt"), None);
    }
}
