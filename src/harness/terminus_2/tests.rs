//! terminus-2's answer rules (docs/harnesses.md) through a prepared request's reader, and its
//! terminal output; the expected values written by hand from the rules.

use serde_json::{Value, json};

use super::messages::{OUTPUT_LIMIT, limit, terminal_output};
use crate::conversation::action::{Answer, Attempts, RetryKind, Verdict};
use crate::harness::test_support::{prepare, reader};
use crate::template::Template;

fn request() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "Fix it"}], "tools": [
        {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}, "required": ["command"]}}}
    ]})
}

fn verdict(text: &str, attempts: Attempts) -> Verdict {
    let prepared = prepare(
        "terminus-2",
        &request(),
        &[("user-agent", "opencode/1.18.33")],
    );
    reader(&prepared).read(&Answer { text, calls: &[] }, attempts)
}

#[test]
fn keystrokes_are_one_shell_call_bounded_by_their_durations() {
    let Verdict::Act(calls) = verdict(
        r#"{"analysis":"a","plan":"p","commands":[{"keystrokes":"ls -la\n","duration":0.1},{"keystrokes":"cat x\n"}]}"#,
        Attempts::default(),
    ) else {
        panic!("an action");
    };
    let args: Value = serde_json::from_str(&calls[0].arguments).expect("json");
    assert_eq!(calls[0].name, "bash");
    // 1.1 s + 10 s + 2 × 8 s.
    assert_eq!(
        args,
        json!({"command": "ls -la\ncat x", "timeout": 27100, "description": "ls -la"})
    );
}

#[test]
fn a_reply_that_does_not_parse_gets_the_parse_error_turn() {
    let Verdict::Retry(retry) = verdict("I'll list the files.", Attempts::default()) else {
        panic!("a retry");
    };
    assert_eq!(retry.kind, RetryKind::Correction);
    assert!(retry.keep_answer && !retry.replaces_earlier);
    assert_eq!(
        retry.turn,
        "Your previous reply could not be read:\nERROR: the reply holds no JSON object\nWARNINGS: - no JSON object was found\n\nPlease correct this and reply with a valid JSON object."
    );
}

/// The reference's `completion_requires_confirmation`: a confirmation turn the first time, nothing (the
/// turn ends) once it was asked.
#[test]
fn task_complete_asks_once_then_ends() {
    let done = r#"{"analysis":"a","plan":"p","commands":[{"keystrokes":"rm -rf x\n"}],"task_complete":true}"#;
    let Verdict::Retry(retry) = verdict(done, Attempts::default()) else {
        panic!("a confirmation");
    };
    assert_eq!(retry.kind, RetryKind::Confirmation);
    assert!(
        retry.turn.starts_with(&format!(
            "Current terminal state:\nroot@<docker-host>:/app#{}\n\nDo you really want",
            "\n".repeat(41)
        )),
        "{}",
        retry.turn
    );
    let asked = Attempts {
        corrections: 0,
        confirmations: 1,
    };
    assert_eq!(verdict(done, asked), Verdict::Final);
}

#[test]
fn an_empty_command_list_ends_the_turn() {
    assert_eq!(
        verdict(
            r#"{"analysis":"a","plan":"p","commands":[]}"#,
            Attempts::default()
        ),
        Verdict::Final
    );
}

/// The reference's `first_request_matches_terminus_shape`, with the built-in texts.
#[test]
fn the_first_request_is_the_task_in_the_instructions_and_nothing_else() {
    let prepared = prepare("terminus-2", &request(), &[]);
    let body = crate::harness::test_support::body(&prepared);
    let keys: Vec<&str> = body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["messages", "model", "temperature"]);
    assert_eq!(body["temperature"], 0.7);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1);
    let text = messages[0]["content"].as_str().expect("text");
    assert!(
        text.ends_with(&format!(
            "Task Description:\nFix it\n\nCurrent terminal state:\nroot@<docker-host>:/app#{}",
            "\n".repeat(41)
        )),
        "{text}"
    );
}

fn limited() -> crate::template::Pattern {
    Template::parse("[cut {{limit}} {{omitted}}]")
        .and_then(|t| t.bind(&[], &["limit", "omitted"]))
        .expect("pattern")
}

#[test]
fn a_plain_output_is_its_last_forty_lines_as_a_screen() {
    let output: String = (1..=45).map(|n| format!("line {n}  \n")).collect();
    let screen = terminal_output(&output, &limited());
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.len(), 40);
    assert_eq!(lines[0], "line 6");
    assert_eq!(lines[39], "line 45");
    assert_eq!(
        terminal_output("hi\n", &limited()),
        format!("hi\n{}", "\n".repeat(39))
    );
    assert_eq!(
        terminal_output(r#"{"output":"ok","metadata":{"exit_code":0}}"#, &limited()),
        format!("ok\n{}", "\n".repeat(39))
    );
}

#[test]
fn output_over_the_limit_keeps_both_ends_on_character_boundaries() {
    let text = "é".repeat(6000);
    let out = limit(&text, &limited());
    let (first, rest) = out.split_once('\n').expect("first half");
    let (marker, last) = rest.split_once('\n').expect("marker");
    assert_eq!(first.len(), 5000);
    assert_eq!(last.len(), 5000);
    assert_eq!(marker, format!("[cut {OUTPUT_LIMIT} 2000]"));
}
