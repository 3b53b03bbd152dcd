//! Codex's Responses-era tools in neutral terms (the `codex-responses` profile):
//! `exec_command {cmd, workdir, yield_time_ms, …}` ↔ `bash {command, workdir, timeout}`, and the
//! freeform `apply_patch` (a V4A patch, carried as `{"input": patch}` on the chat side) ↔ `edit` /
//! `write`, plus their outputs reduced to what opencode's tools answer.
//!
//! A patch from the history becomes `write` (one added file) or `edit` (one file, one chunk with
//! something to replace), else a `bash` call running `apply_patch` on it. An upstream `edit` becomes
//! an `Update File` patch whose removed lines are `oldString`: Codex matches whole lines, so an
//! `oldString` that starts or ends mid-line does not apply (Codex says so and the model retries).

use serde_json::{Map, Value, json};

use super::capability::Capability;
use super::converter::one;

/// Codex caps `yield_time_ms` at 30 s (the reference maps opencode's timeout the same way).
const MAX_YIELD_MS: u64 = 30_000;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";

/// `exec_command` arguments → `bash` arguments.
pub fn exec_to_bash(args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("cmd")?.as_str()?;
    let mut out = Map::new();
    out.insert("command".into(), json!(command));
    if let Some(workdir) = args.get("workdir").filter(|w| w.is_string()) {
        out.insert("workdir".into(), workdir.clone());
    }
    if let Some(yield_ms) = args.get("yield_time_ms").filter(|t| t.is_number()) {
        out.insert("timeout".into(), yield_ms.clone());
    }
    Some(Value::Object(out))
}

/// `bash` arguments → `exec_command` arguments (`description` has no counterpart).
pub fn bash_to_exec(args: &Map<String, Value>) -> Option<Value> {
    let command = args.get("command")?.as_str()?;
    let mut out = Map::new();
    out.insert("cmd".into(), json!(command));
    if let Some(workdir) = args.get("workdir").filter(|w| w.is_string()) {
        out.insert("workdir".into(), workdir.clone());
    }
    if let Some(timeout) = args.get("timeout").and_then(Value::as_u64) {
        out.insert("yield_time_ms".into(), json!(timeout.min(MAX_YIELD_MS)));
    }
    Some(Value::Object(out))
}

/// A neutral `edit` or `write` call → the `apply_patch` arguments `{"input": patch}`.
pub fn to_patch(capability: Capability, args: &Map<String, Value>) -> Option<Value> {
    let path = args.get("filePath")?.as_str()?;
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let patch = match capability {
        Capability::Write => add_file(path, text("content")?),
        Capability::Edit => {
            let old = text("oldString")?;
            let new = text("newString")?;
            if old.is_empty() {
                add_file(path, new)
            } else {
                let mut patch = format!("{BEGIN}\n*** Update File: {path}\n@@\n");
                for line in old.lines() {
                    patch.push('-');
                    patch.push_str(line);
                    patch.push('\n');
                }
                for line in new.lines() {
                    patch.push('+');
                    patch.push_str(line);
                    patch.push('\n');
                }
                patch.push_str(END);
                patch
            }
        }
        _ => return None,
    };
    Some(json!({ "input": patch }))
}

fn add_file(path: &str, content: &str) -> String {
    let mut patch = format!("{BEGIN}\n*** Add File: {path}\n");
    for line in content.lines() {
        patch.push('+');
        patch.push_str(line);
        patch.push('\n');
    }
    patch.push_str(END);
    patch
}

/// An `apply_patch` call from the history → (capability, neutral arguments): one added file a
/// write, one plain replacement an edit, anything else a shell running `apply_patch` on it.
pub fn patch_calls(arguments: &str) -> (Capability, Value) {
    let input = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut args)) => match args.remove("input") {
            Some(Value::String(input)) => input,
            _ => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    };
    if let Some(call) = simple_patch(&input) {
        return call;
    }
    let command = format!("apply_patch <<'EOF_PATCH'\n{}\nEOF_PATCH", input.trim_end());
    (
        Capability::Shell,
        json!({"command": command, "description": "Apply a patch"}),
    )
}

/// One added file → `write`; one updated file with one chunk that replaces something → `edit`.
fn simple_patch(patch: &str) -> Option<(Capability, Value)> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    let (first, rest) = lines.split_first()?;
    let (last, body) = rest.split_last()?;
    if first.trim() != BEGIN || last.trim() != END {
        return None;
    }
    let (header, body) = body.split_first()?;
    if let Some(path) = header.strip_prefix("*** Add File: ") {
        let mut content = String::new();
        for line in body {
            content.push_str(line.strip_prefix('+')?);
            content.push('\n');
        }
        return Some((
            Capability::Write,
            json!({"filePath": path.trim(), "content": content}),
        ));
    }
    let path = header.strip_prefix("*** Update File: ")?;
    let body = match body.split_first() {
        Some((chunk, rest)) if chunk.starts_with("@@") => rest,
        _ => body,
    };
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for line in body {
        if let Some(removed) = line.strip_prefix('-') {
            old.push(removed);
        } else if let Some(added) = line.strip_prefix('+') {
            new.push(added);
        } else if let Some(context) = line.strip_prefix(' ').or((line.is_empty()).then_some("")) {
            old.push(context);
            new.push(context);
        } else {
            // A second chunk, a move, an end-of-file marker: not one plain replacement.
            return None;
        }
    }
    if old.is_empty() {
        return None;
    }
    Some((
        Capability::Edit,
        json!({"filePath": path.trim(), "oldString": old.join("\n"), "newString": new.join("\n")}),
    ))
}

/// An `exec_command` result as opencode's bash reports it: only the command's output (Codex
/// puts `Chunk ID`, `Wall time`, `Process exited with code N`, … above an `Output:` line). A
/// process still running (Codex gives a session id) keeps the whole text.
pub fn exec_output(text: &str) -> Option<String> {
    if text.contains("Process running with session ID") {
        return None;
    }
    let mut rest = text;
    loop {
        let (line, after) = rest.split_once('\n')?;
        if line.trim_end() == "Output:" {
            return Some(if after.is_empty() {
                "(no output)".to_owned()
            } else {
                after.to_owned()
            });
        }
        let header = [
            "Chunk ID: ",
            "Wall time: ",
            "Process exited with code ",
            "Original token count: ",
            "Total output lines: ",
            "Exit code: ",
        ]
        .iter()
        .any(|h| line.starts_with(h));
        if !header {
            return None;
        }
        rest = after;
    }
}

/// An `apply_patch` success as opencode's `write`/`edit` report it: only added files →
/// `Wrote file successfully.`, only modified ones → `Edit applied successfully.`. Codex 0.171
/// puts its exec header (`Exit code: …`, `Wall time: …`, `Output:`) above the success text: it is
/// read through that header too.
pub fn patch_output(text: &str) -> Option<String> {
    let unwrapped = exec_output(text);
    let text = unwrapped.as_deref().unwrap_or(text);
    let files = text.strip_prefix("Success. Updated the following files:\n")?;
    let marks: Vec<&str> = files
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_once(' ').map_or("", |(mark, _)| mark))
        .collect();
    if !marks.is_empty() && marks.iter().all(|m| *m == "A") {
        Some("Wrote file successfully.".to_owned())
    } else if !marks.is_empty() && marks.iter().all(|m| *m == "M") {
        Some("Edit applied successfully.".to_owned())
    } else {
        None
    }
}

/// `exec_command` → the neutral shell.
pub(crate) fn exec_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    one(Capability::Shell, exec_to_bash(args))
}

pub(crate) fn neutral_to_exec(_: Capability, args: &Map<String, Value>) -> Option<Value> {
    bash_to_exec(args)
}

/// `apply_patch` (`{"input": patch}`) → one neutral call, as `patch_calls` reads the patch.
pub(crate) fn patch_to_neutral(
    _: Capability,
    args: &Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let arguments = Value::Object(args.clone()).to_string();
    Some(vec![patch_calls(&arguments)])
}

pub(crate) fn neutral_to_patch(capability: Capability, args: &Map<String, Value>) -> Option<Value> {
    to_patch(capability, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> Map<String, Value> {
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn exec_command_and_bash_translate_both_ways() {
        let bash = exec_to_bash(&object(
            r#"{"cmd":"ls -la","workdir":"/w","yield_time_ms":5000,"max_output_tokens":100,"tty":false}"#,
        ));
        assert_eq!(
            bash,
            Some(json!({"command": "ls -la", "workdir": "/w", "timeout": 5000}))
        );
        // docs/agents.md "What the Responses front does": yield_time_ms = min(timeout, 30000);
        // description dropped.
        let exec = bash_to_exec(&object(
            r#"{"command":"cargo test","description":"Run tests","timeout":120000}"#,
        ));
        assert_eq!(
            exec,
            Some(json!({"cmd": "cargo test", "yield_time_ms": 30000}))
        );
        assert_eq!(bash_to_exec(&object(r#"{"command":3}"#)), None);
    }

    #[test]
    fn edit_and_write_become_v4a_patches() {
        let edit = to_patch(
            Capability::Edit,
            &object(
                r#"{"filePath":"src/a.rs","oldString":"let a = 1;\nlet b = 2;","newString":"let a = 3;"}"#,
            ),
        );
        assert_eq!(
            edit,
            Some(
                json!({"input": "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-let a = 1;\n-let b = 2;\n+let a = 3;\n*** End Patch"})
            )
        );
        let write = to_patch(
            Capability::Write,
            &object(r#"{"filePath":"notes.txt","content":"one\ntwo\n"}"#),
        );
        assert_eq!(
            write,
            Some(
                json!({"input": "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch"})
            )
        );
    }

    #[test]
    fn simple_patches_in_history_become_write_or_edit() {
        let add = json!({"input": "*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch\n"});
        assert_eq!(
            patch_calls(&add.to_string()),
            (
                Capability::Write,
                json!({"filePath": "hello.txt", "content": "hello\nworld\n"})
            )
        );
        let update = json!({"input": "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n     let x = 1;\n-    println!(\"{x}\");\n+    println!(\"x = {x}\");\n*** End Patch"});
        assert_eq!(
            patch_calls(&update.to_string()),
            (
                Capability::Edit,
                json!({"filePath": "src/main.rs", "oldString": "    let x = 1;\n    println!(\"{x}\");", "newString": "    let x = 1;\n    println!(\"x = {x}\");"})
            )
        );
    }

    #[test]
    fn other_patches_run_through_bash() {
        let two_files = "*** Begin Patch\n*** Add File: a\n+a\n*** Delete File: b\n*** End Patch";
        let (capability, args) = patch_calls(&json!({ "input": two_files }).to_string());
        assert_eq!(capability, Capability::Shell);
        assert_eq!(
            args,
            json!({"command": format!("apply_patch <<'EOF_PATCH'\n{two_files}\nEOF_PATCH"), "description": "Apply a patch"})
        );
    }

    #[test]
    fn a_patch_result_under_codex_s_exec_header_is_read_through_it() {
        assert_eq!(
            patch_output(
                "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nSuccess. Updated the following files:\nA made.txt\n"
            )
            .as_deref(),
            Some("Wrote file successfully.")
        );
        assert_eq!(
            patch_output("Exit code: 1\nWall time: 0 seconds\nOutput:\nerror: patch failed\n"),
            None,
            "a failure keeps Codex's whole text"
        );
    }

    #[test]
    fn outputs_become_opencode_plain_output() {
        let exec = "Chunk ID: 4f2a\nWall time: 0.0102 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nhi\n";
        assert_eq!(exec_output(exec).as_deref(), Some("hi\n"));
        assert_eq!(
            exec_output("Process exited with code 0\nOutput:\n").as_deref(),
            Some("(no output)")
        );
        assert_eq!(
            exec_output("Chunk ID: 1\nProcess running with session ID 3\nOutput:\nwaiting"),
            None
        );
        assert_eq!(exec_output("plain text"), None);
        assert_eq!(
            patch_output("Success. Updated the following files:\nA made.txt\n").as_deref(),
            Some("Wrote file successfully.")
        );
        assert_eq!(
            patch_output("Success. Updated the following files:\nM src/a.rs\n").as_deref(),
            Some("Edit applied successfully.")
        );
        assert_eq!(
            patch_output("Success. Updated the following files:\nA a\nD b\n"),
            None
        );
    }
}
