//! The `codex` profile's converters (Codex CLI up to 0.94, on Chat Completions): `shell` (argv) and
//! `shell_command` (a string) ↔ the neutral shell, `update_plan` ↔ the neutral todo list. Pure.
//! (Codex's text form of a command result is read with the other result texts, `profiles::results`.)

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;

/// `["bash","-lc",X]` → `X`; any other argv → its shell-quoted join.
fn argv_to_command(argv: &[Value]) -> Option<String> {
    let parts: Vec<&str> = argv.iter().map(Value::as_str).collect::<Option<_>>()?;
    if let [shell, flag, script] = parts.as_slice()
        && *shell == "bash"
        && *flag == "-lc"
    {
        return Some((*script).to_owned());
    }
    shlex::try_join(parts.iter().copied()).ok()
}

pub(crate) fn shell_to_bash(args: &Map<String, Value>) -> Option<Value> {
    let command = match args.get("command")? {
        Value::Array(argv) => argv_to_command(argv)?,
        Value::String(command) => command.clone(),
        _ => return None,
    };
    let mut out = Map::new();
    out.insert("command".into(), Value::String(command));
    if let Some(workdir) = args.get("workdir").filter(|w| w.is_string()) {
        out.insert("workdir".into(), workdir.clone());
    }
    if let Some(timeout) = args.get("timeout_ms").filter(|t| !t.is_null()) {
        out.insert("timeout".into(), timeout.clone());
    }
    Some(Value::Object(out))
}

pub(crate) fn bash_to_shell(args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("command")?.as_str()?;
    let mut out = Map::new();
    out.insert("command".into(), json!(["bash", "-lc", command]));
    if let Some(workdir) = args.get("workdir").filter(|w| w.is_string()) {
        out.insert("workdir".into(), workdir.clone());
    }
    if let Some(timeout) = args.get("timeout").filter(|t| !t.is_null()) {
        out.insert("timeout_ms".into(), timeout.clone());
    }
    Some(Value::Object(out))
}

pub(crate) fn bash_to_shell_command(args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("command")?.as_str()?;
    let mut out = Map::new();
    out.insert("command".into(), Value::String(command.to_owned()));
    if let Some(workdir) = args.get("workdir").filter(|w| w.is_string()) {
        out.insert("workdir".into(), workdir.clone());
    }
    if let Some(timeout) = args.get("timeout").filter(|t| !t.is_null()) {
        out.insert("timeout_ms".into(), timeout.clone());
    }
    Some(Value::Object(out))
}

pub(crate) fn plan_to_todos(args: &Map<String, Value>) -> Option<Value> {
    let plan = args.get("plan")?.as_array()?;
    let todos: Vec<Value> = plan
        .iter()
        .map(|item| {
            let field = |k: &str| item.get(k).cloned().unwrap_or_else(|| json!(""));
            let priority = item
                .get("priority")
                .filter(|p| p.is_string())
                .cloned()
                .unwrap_or_else(|| json!("medium"));
            json!({"content": field("step"), "status": field("status"), "priority": priority})
        })
        .collect();
    Some(json!({ "todos": todos }))
}

pub(crate) fn todos_to_plan(args: &Map<String, Value>) -> Option<Value> {
    let todos = args.get("todos")?.as_array()?;
    let plan: Vec<Value> = todos
        .iter()
        .map(|item| {
            let status = match item.get("status").and_then(Value::as_str) {
                // Codex's plan has no cancelled state.
                Some("cancelled") => "completed",
                Some(other) => other,
                None => "pending",
            };
            json!({"step": item.get("content").cloned().unwrap_or_else(|| json!("")), "status": status})
        })
        .collect();
    Some(json!({ "plan": plan }))
}

/// `shell` / `shell_command` → the neutral shell.
pub(crate) fn shell_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Shell, shell_to_bash(args))
}

pub(crate) fn neutral_to_shell(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    bash_to_shell(args)
}

pub(crate) fn neutral_to_shell_command(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    bash_to_shell_command(args)
}

/// `update_plan` → the neutral todo list.
pub(crate) fn plan_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Todo, plan_to_todos(args))
}

pub(crate) fn neutral_to_plan(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    todos_to_plan(args)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::profiles::{Profile, Profiles};

    fn codex() -> Arc<Profile> {
        Profiles::built_in("codex")
    }

    #[test]
    fn shell_argv_becomes_a_bash_command_and_back() {
        let (name, args) = codex().neutral(
            "shell",
            r#"{"command":["bash","-lc","ls -la | head"],"workdir":"/w","timeout_ms":5000}"#,
        );
        assert_eq!(name, "shell");
        assert_eq!(
            args,
            r#"{"command":"ls -la | head","workdir":"/w","timeout":5000}"#
        );
        let (name, args) = codex().neutral("shell", r#"{"command":["rg","-n","two words","src"]}"#);
        assert_eq!(
            (name.as_str(), args.as_str()),
            ("shell", r#"{"command":"rg -n 'two words' src"}"#)
        );

        let back = codex().client(
            "bash",
            r#"{"command":"cargo test","description":"Run tests","workdir":"/w","timeout":60000}"#,
            &["shell".to_owned()],
        );
        assert_eq!(
            back,
            Some((
                "shell".into(),
                r#"{"command":["bash","-lc","cargo test"],"workdir":"/w","timeout_ms":60000}"#
                    .into()
            ))
        );
    }

    #[test]
    fn shell_command_is_bash_with_a_string_command() {
        let (name, args) = codex().neutral(
            "shell_command",
            r#"{"command":"git status","workdir":"/w","timeout_ms":1000,"login":true}"#,
        );
        assert_eq!(
            (name.as_str(), args.as_str()),
            (
                "shell",
                r#"{"command":"git status","workdir":"/w","timeout":1000}"#
            )
        );
        let bash = r#"{"command":"ls","description":"List","timeout":5}"#;
        let offered = ["shell_command".to_owned(), "update_plan".to_owned()];
        assert_eq!(
            codex().client("bash", bash, &offered),
            Some((
                "shell_command".into(),
                r#"{"command":"ls","timeout_ms":5}"#.into()
            ))
        );
        // A client that offered `shell` (or nothing to choose by) gets `shell`.
        assert_eq!(
            codex()
                .client("bash", bash, &["shell".to_owned()])
                .map(|c| c.0),
            Some("shell".into())
        );
        assert_eq!(
            codex().client("bash", bash, &[]).map(|c| c.0),
            Some("shell".into())
        );
    }

    #[test]
    fn update_plan_and_todowrite_translate_both_ways() {
        let (name, args) = codex().neutral(
            "update_plan",
            r#"{"explanation":"why","plan":[{"step":"Read code","status":"completed"},{"step":"Fix","status":"in_progress"}]}"#,
        );
        assert_eq!(name, "todo");
        assert_eq!(
            args,
            r#"{"todos":[{"content":"Read code","status":"completed","priority":"medium"},{"content":"Fix","status":"in_progress","priority":"medium"}]}"#
        );
        let back = codex().client(
            "todowrite",
            r#"{"todos":[{"content":"A","status":"cancelled","priority":"high"},{"content":"B","status":"pending","priority":"low"}]}"#,
            &[],
        );
        assert_eq!(
            back,
            Some((
                "update_plan".into(),
                r#"{"plan":[{"step":"A","status":"completed"},{"step":"B","status":"pending"}]}"#
                    .into()
            ))
        );
    }

    #[test]
    fn codex_outputs_are_unwrapped() {
        let text = r#"{"output":"total 0\n","metadata":{"exit_code":0,"duration_seconds":0.1}}"#;
        assert_eq!(codex().output_to_neutral("shell", text), "total 0\n");
        assert_eq!(codex().output_to_neutral("shell", "plain"), "plain");
        assert_eq!(
            codex().output_to_neutral("shell", r#"{"output":"","metadata":{"exit_code":0}}"#),
            "(no output)"
        );
        assert_eq!(Profile::none().output_to_neutral("bash", text), text);
    }

    #[test]
    fn only_an_object_with_an_output_string_is_unwrapped_and_anything_else_keeps_its_text() {
        let output = |text: &str| codex().output_to_neutral("shell", text);
        // Escapes are read, and the object's other fields may be anything.
        assert_eq!(
            output(r#"{"metadata":{"a":[1,{"b":null}]},"output":"line\n\"q\" \u00e9"}"#),
            "line\n\"q\" é"
        );
        for kept in [
            r#"["not an object"]"#,
            r#"{"output":5,"metadata":{}}"#,
            r#"{"output":null}"#,
            r#"{"metadata":{"exit_code":1}}"#,
            r#"{"output":"a","output":"b"}"#,
            r#"{"output":"cut"#,
        ] {
            assert_eq!(output(kept), kept, "{kept}");
        }
    }
}
