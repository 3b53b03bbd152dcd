//! The `claude-code` alias profile: Claude Code's tools (Claude Code 2.1.x; docs/agents.md) and
//! opencode's, argument by argument. Plain renames use `Converter::Only` (fields outside the
//! table are dropped both ways: Claude Code's schemas say `additionalProperties: false`, and
//! opencode's tools do not take Claude Code's extras); the few that need more have converters here.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::profiles::{Alias, Converter, Profile, ResultRule};

impl Profile {
    pub fn claude_code() -> Self {
        let alias = |client: &str, opencode: &str, converter, fields: &[(&str, &str)]| Alias {
            fields: fields
                .iter()
                .map(|(c, o)| ((*c).to_owned(), (*o).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            ..Alias::new(client, opencode, converter)
        };
        let result =
            |tool: &str, equals: Option<&str>, starts_with: Option<&str>, text: &str| ResultRule {
                tool: tool.into(),
                equals: equals.map(str::to_owned),
                starts_with: starts_with.map(str::to_owned),
                text: text.into(),
            };
        let task = [
            ("description", "description"),
            ("prompt", "prompt"),
            ("subagent_type", "subagent_type"),
        ];
        Self {
            name: "claude-code".into(),
            user_agents: vec!["claude-cli/".into()],
            apps: vec!["cli".into()],
            fingerprint: vec!["Bash.command".into(), "Write.file_path".into()],
            // Claude Code's own machinery: a placeholder for tools it loads later, and the
            // search that loads them; neither means anything to another model.
            drop: vec!["DeferredToolPlaceholder".into(), "ToolSearch".into()],
            results: vec![
                result(
                    "Bash",
                    Some("(Bash completed with no output)"),
                    None,
                    "(no output)",
                ),
                result(
                    "Write",
                    None,
                    Some("File created successfully at: "),
                    "Wrote file successfully.",
                ),
                result("Write", None, Some("The file "), "Wrote file successfully."),
                result(
                    "Edit",
                    None,
                    Some("The file "),
                    "Edit applied successfully.",
                ),
            ],
            unwrap_output_json: false,
            aliases: vec![
                alias("Bash", "bash", Converter::ClaudeBash, &[]),
                alias(
                    "Read",
                    "read",
                    Converter::Only,
                    &[
                        ("file_path", "filePath"),
                        ("offset", "offset"),
                        ("limit", "limit"),
                    ],
                ),
                alias(
                    "Edit",
                    "edit",
                    Converter::Only,
                    &[
                        ("file_path", "filePath"),
                        ("old_string", "oldString"),
                        ("new_string", "newString"),
                        ("replace_all", "replaceAll"),
                    ],
                ),
                alias(
                    "Write",
                    "write",
                    Converter::Only,
                    &[("file_path", "filePath"), ("content", "content")],
                ),
                alias(
                    "Glob",
                    "glob",
                    Converter::Only,
                    &[("pattern", "pattern"), ("path", "path")],
                ),
                alias(
                    "Grep",
                    "grep",
                    Converter::Only,
                    &[
                        ("pattern", "pattern"),
                        ("path", "path"),
                        ("glob", "include"),
                    ],
                ),
                alias("TodoWrite", "todowrite", Converter::ClaudeTodoWrite, &[]),
                alias("WebFetch", "webfetch", Converter::ClaudeWebFetch, &[]),
                alias("Task", "task", Converter::Only, &task),
                alias("Agent", "task", Converter::Only, &task),
            ],
        }
    }
}

/// Claude Code `Bash {command, timeout, description, run_in_background, dangerouslyDisableSandbox}`
/// → opencode `bash {command, timeout, description}`.
pub(super) fn bash_to_opencode(args: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    out.insert("command".into(), args.get("command")?.clone());
    for key in ["timeout", "description"] {
        if let Some(value) = args.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    Some(Value::Object(out))
}

/// opencode `bash {command, timeout, workdir, description}` → Claude Code `Bash`, which has no
/// working directory: a `workdir` becomes a `cd` in front of the command.
pub(super) fn bash_to_client(args: &Map<String, Value>) -> Option<Value> {
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
pub(super) fn todos_to_opencode(args: &Map<String, Value>) -> Option<Value> {
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
pub(super) fn todos_to_client(args: &Map<String, Value>) -> Option<Value> {
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
pub(super) fn webfetch_to_opencode(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"url": args.get("url")?.clone(), "format": "markdown"}))
}

/// `webfetch {url, format}` → `WebFetch {url, prompt}`: Claude Code's tool needs a prompt to
/// run the page through; asking for the whole content keeps opencode's meaning.
pub(super) fn webfetch_to_client(args: &Map<String, Value>) -> Option<Value> {
    Some(json!({"url": args.get("url")?.clone(),
        "prompt": "Return the full content of the page as markdown."}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> Profile {
        Profile::claude_code()
    }

    #[test]
    fn bash_drops_claude_extras_and_workdir_becomes_cd() {
        let (name, args) = claude().call_to_opencode(
            "Bash",
            r#"{"command":"ls","timeout":1000,"description":"List","run_in_background":false,"dangerouslyDisableSandbox":true}"#,
        );
        assert_eq!(
            (name.as_str(), args.as_str()),
            (
                "bash",
                r#"{"command":"ls","timeout":1000,"description":"List"}"#
            )
        );
        let back = claude().call_to_client(
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
            claude().call_to_opencode(
                "Edit",
                r#"{"file_path":"/a.rs","old_string":"x","new_string":"y","replace_all":true}"#
            ),
            (
                "edit".into(),
                r#"{"filePath":"/a.rs","oldString":"x","newString":"y","replaceAll":true}"#.into()
            )
        );
        assert_eq!(
            claude().call_to_opencode(
                "Read",
                r#"{"file_path":"/a.rs","offset":10,"limit":5,"pages":"1"}"#
            ),
            (
                "read".into(),
                r#"{"filePath":"/a.rs","offset":10,"limit":5}"#.into()
            )
        );
        assert_eq!(
            claude().call_to_client(
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
            claude().call_to_client(
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
        let (name, args) = claude().call_to_opencode(
            "TodoWrite",
            r#"{"todos":[{"content":"Fix bug","status":"in_progress","activeForm":"Fixing bug"}]}"#,
        );
        assert_eq!(name, "todowrite");
        assert_eq!(
            args,
            r#"{"todos":[{"content":"Fix bug","status":"in_progress","priority":"medium","id":"1"}]}"#
        );
        let back = claude().call_to_client(
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
            claude().call_to_opencode(
                "WebFetch",
                r#"{"url":"https://x.test","prompt":"summarise"}"#
            ),
            (
                "webfetch".into(),
                r#"{"url":"https://x.test","format":"markdown"}"#.into()
            )
        );
        let task =
            r#"{"description":"Find","prompt":"Look","subagent_type":"general","task_id":"t"}"#;
        assert_eq!(
            claude()
                .call_to_client("task", task, &["Agent".to_owned()])
                .map(|c| c.0),
            Some("Agent".into())
        );
        assert_eq!(
            claude().call_to_client("task", task, &["Task".to_owned()]),
            Some((
                "Task".into(),
                r#"{"description":"Find","prompt":"Look","subagent_type":"general"}"#.into()
            ))
        );
    }
}
