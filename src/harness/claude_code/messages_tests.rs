use serde_json::json;

use super::*;
use crate::conversation::{CallInput, Message};

fn user(text: &str) -> Item {
    Item::Message(Message::text(Role::User, text))
}

fn call(id: &str, name: &str, arguments: &str) -> Item {
    Item::ToolCall(ToolCall {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        input: CallInput::Arguments(arguments.to_owned()),
    })
}

fn result(id: &str, text: &str, is_error: bool) -> Item {
    Item::ToolResult(ToolResult {
        call_id: Some(id.to_owned()),
        content: Content::Text(text.to_owned()),
        is_error,
    })
}

#[test]
fn a_first_turn_gets_the_reminder_first_and_the_breakpoint_on_the_user_s_words() {
    let items = [
        Item::Message(Message::text(Role::System, "the client's own prompt")),
        user("Fix the login bug"),
    ];
    assert_eq!(
        build(&items, "REMINDER\n\n", Skills::Listed),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "REMINDER\n\n"},
            {"type": "text", "text": "Fix the login bug", "cache_control": {"type": "ephemeral"}},
        ]})]
    );
}

#[test]
fn calls_results_and_thinking_take_anthropic_blocks_merged_by_role_in_call_order() {
    let items = [
        user("List and edit"),
        Item::Reasoning(Reasoning {
            text: "Two calls.".to_owned(),
            opaque: Some(json!({"type": "thinking", "signature": "sig-1"})),
            sealed: None,
            signature: None,
            redacted: Vec::new(),
        }),
        Item::Message(Message::text(Role::Assistant, "Working.")),
        call("toolu_a", "Bash", r#"{"command":"ls"}"#),
        call(
            "toolu_b",
            "Edit",
            "{\"file_path\":\"/a\",\"old_string\":\"x\",\"new_string\":\"y  \\nz\\t\"}",
        ),
        // Answered out of order: sent in the calls' order.
        result("toolu_b", "no such file", true),
        result("toolu_a", "a.txt\n", false),
        user("thanks"),
    ];
    let messages = build(&items, "R", Skills::Listed);
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Two calls.", "signature": "sig-1"},
            {"type": "text", "text": "Working."},
            {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "toolu_b", "name": "Edit", "input":
                {"file_path": "/a", "old_string": "x", "new_string": "y\nz", "replace_all": false}},
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a.txt", "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_b",
                "content": "<tool_use_error>no such file</tool_use_error>", "is_error": true},
            {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}},
        ]})
    );
    // The first user message, uncached now, is no longer a lone text: the reminder leads it.
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [{"type": "text", "text": "R"},
            {"type": "text", "text": "List and edit"}]})
    );
}

#[test]
fn the_breakpoint_falls_on_a_trailing_tool_result_and_only_there() {
    let items = [
        user("go"),
        call("toolu_a", "Read", r#"{"file_path":"/x"}"#),
        result("toolu_a", "contents", false),
    ];
    let messages = build(&items, "R", Skills::Listed);
    let marked: Vec<_> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b.get("cache_control").is_some())
        .collect();
    assert_eq!(
        marked,
        [
            json!({"type": "tool_result", "tool_use_id": "toolu_a", "content": "contents",
            "cache_control": {"type": "ephemeral"}})
        ]
    );
}

#[test]
fn a_skills_block_becomes_claude_code_s_reminder_and_the_date_follows_it() {
    let developer = "<permissions instructions>no</permissions instructions>\n<skills_instructions>\n## Skills\n- pdf: Read and fill PDF forms. (file: /home/u/.codex/skills/pdf/SKILL.md)\n- review: Review a change.\n</skills_instructions>";
    let items = [
        Item::Message(Message::text(Role::Developer, developer)),
        Item::Message(Message::text(
            Role::Developer,
            "<collaboration_mode>x</collaboration_mode>",
        )),
        user("hi"),
    ];
    let listed = "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- pdf: Read and fill PDF forms.\n- review: Review a change.\n</system-reminder>\n";
    assert_eq!(
        build(&items, "R", Skills::Listed),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": listed},
            {"type": "text", "text": "R"},
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
        ]})]
    );
    let raw = build(&items, "R", Skills::Raw);
    assert!(
        raw[0]["content"][1]["text"]
            .as_str()
            .expect("text")
            .starts_with("<skills_instructions>")
    );
    assert_eq!(
        build(&items, "R", Skills::Dropped)[0]["content"]
            .as_array()
            .expect("blocks")
            .len(),
        2
    );
}

/// Issue 34: reasoning the seal or the memo gave back goes as the server sent it — the thinking
/// with the server's signature, then each redacted block, then the calls; redacted thinking
/// alone is no thinking block (an unsigned empty one would be refused).
#[test]
fn the_server_s_signature_and_redacted_thinking_go_back_before_the_calls() {
    let reasoning = |text: &str, signature: Option<&str>| {
        Item::Reasoning(Reasoning {
            text: text.to_owned(),
            sealed: Some("hpr4.sealed".to_owned()),
            signature: signature.map(str::to_owned),
            redacted: vec!["EnC1".to_owned(), "EnC2".to_owned()],
            ..Reasoning::default()
        })
    };
    let items = [
        user("list"),
        reasoning("Need ls.", Some("EqQBsig")),
        call("toolu_a", "Bash", r#"{"command":"ls"}"#),
        result("toolu_a", "a.txt", false),
        reasoning("", None),
        call("toolu_b", "Bash", r#"{"command":"pwd"}"#),
        result("toolu_b", "/", false),
    ];
    let messages = build(&items, "R", Skills::Listed);
    let kinds = |m: &serde_json::Value| -> Vec<String> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| b["type"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(
        kinds(&messages[1]),
        [
            "thinking",
            "redacted_thinking",
            "redacted_thinking",
            "tool_use"
        ]
    );
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "thinking", "thinking": "Need ls.", "signature": "EqQBsig"})
    );
    assert_eq!(
        messages[1]["content"][2],
        json!({"type": "redacted_thinking", "data": "EnC2"})
    );
    assert_eq!(
        kinds(&messages[3]),
        ["redacted_thinking", "redacted_thinking", "tool_use"]
    );
}
