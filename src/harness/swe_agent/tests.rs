//! swe-agent's answer rules (docs/harnesses.md) through a prepared request's reader: what each
//! answer becomes, the expected calls written by hand from the rules.

use serde_json::{Value, json};

use crate::conversation::action::{Answer, Attempts, RetryKind, Verdict};
use crate::harness::test_support::{prepare, reader};

fn request() -> Value {
    json!({"model": "m", "messages": [
        {"role": "system", "content": "You are opencode.\nWorking directory: /work/repo"},
        {"role": "user", "content": "Fix it."}
    ], "tools": [
        {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}, "required": ["command"]}}},
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}, "offset": {"type": "number"}, "limit": {"type": "number"}}, "required": ["filePath"]}}},
        {"type": "function", "function": {"name": "edit", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}, "oldString": {"type": "string"}, "newString": {"type": "string"}}, "required": ["filePath", "oldString", "newString"]}}}
    ]})
}

fn verdict(text: &str) -> Verdict {
    let prepared = prepare(
        "swe-agent",
        &request(),
        &[("user-agent", "opencode/1.18.33")],
    );
    reader(&prepared).read(&Answer { text, calls: &[] }, Attempts::default())
}

fn act(text: &str) -> Vec<(String, Value)> {
    match verdict(text) {
        Verdict::Act(calls) => calls
            .into_iter()
            .map(|c| (c.name, serde_json::from_str(&c.arguments).expect("json")))
            .collect(),
        other => panic!("not an action: {other:?}"),
    }
}

#[test]
fn a_bash_block_is_a_shell_call_of_thirty_seconds() {
    let calls = act("DISCUSSION\nLet me look.\n\n```bash\nls -la\n```");
    assert_eq!(
        calls[0],
        (
            "bash".to_owned(),
            json!({"command": "ls -la", "timeout": 30000, "description": "ls -la"})
        )
    );
    assert_eq!(
        calls[1].1,
        json!({"command": "ls -la", "description": "ls -la"})
    );
}

#[test]
fn an_editor_view_is_a_read_relative_to_the_working_directory() {
    let calls = act("```\nstr_replace_editor view src/a.py --view_range 3 4\n```");
    assert_eq!(
        calls[0],
        (
            "view".to_owned(),
            json!({"filePath": "/work/repo/src/a.py", "offset": 3, "limit": 2})
        )
    );
    assert_eq!(
        calls[1].0, "bash",
        "the shell carries it for a client without a read"
    );
}

#[test]
fn submit_ends_the_turn() {
    assert_eq!(verdict("All done.\n```\nsubmit\n```"), Verdict::Final);
}

#[test]
fn no_command_gets_the_format_correction_that_replaces_earlier_pairs() {
    let Verdict::Retry(retry) = verdict("I think the bug is in a.py.") else {
        panic!("a correction");
    };
    assert_eq!(retry.kind, RetryKind::Correction);
    assert!(retry.keep_answer && retry.replaces_earlier);
    assert!(
        retry
            .turn
            .starts_with("Your reply did not follow the required format."),
        "{}",
        retry.turn
    );
}

#[test]
fn an_editor_line_it_refuses_and_undo_are_told_as_observations() {
    let Verdict::Retry(retry) = verdict("```\nstr_replace_editor create /a.py\n```") else {
        panic!("an observation");
    };
    assert!(
        retry.turn.starts_with("OBSERVATION:\nThe str_replace_editor command could not be carried out: create needs --file_text."),
        "{}",
        retry.turn
    );
    let Verdict::Retry(retry) = verdict("```\nstr_replace_editor undo_edit /a.py\n```") else {
        panic!("an observation");
    };
    assert_eq!(
        retry.turn,
        "OBSERVATION:\n`str_replace_editor undo_edit /a.py` cannot be carried out in this environment. Reach the same result with a plain shell command instead."
    );
}

#[test]
fn a_client_without_a_shell_is_refused() {
    let request = json!({"model": "m", "messages": [{"role": "user", "content": "Fix it."}],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]}}}]});
    let err = crate::harness::test_support::refused("swe-agent", &request);
    assert!(
        err.contains("runs the model's commands through the client's shell tool")
            && err.contains("(its tools: read)"),
        "{err}"
    );
}
