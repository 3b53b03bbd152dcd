use serde_json::json;

use super::*;
use crate::harness::test_support::{body, prepare};

fn reminders() -> Reminders {
    Reminders::from_prompts(&Prompts::load(None).expect("built-in prompts")).expect("texts")
}

fn turn(id: &str, tool: &str, input: &Value) -> [Value; 2] {
    [
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]}),
    ]
}

fn bash_turns(count: usize) -> Vec<Value> {
    (1..=count)
        .flat_map(|n| turn(&format!("b{n}"), "Bash", &json!({"command": "ls"})))
        .collect()
}

/// The user's words are the first step, the ninth result the tenth.
#[test]
fn the_tenth_step_s_result_is_followed_by_the_unused_reminder_as_a_system_message() {
    let r = reminders();
    let mut messages = vec![json!({"role": "user", "content": "Fix the login bug"})];
    messages.extend(bash_turns(9));
    let last = messages.len() - 1;
    let before = messages[last].clone();
    r.add(&mut messages);
    assert_eq!(messages[last], before, "the result is left as it was");
    let text = r.unused.trim_start_matches("<system-reminder>\n");
    let text = text.trim_end_matches("\n</system-reminder>");
    assert_eq!(
        messages[last + 1],
        json!({"role": "system", "content": text})
    );
    assert!(!text.contains("system-reminder"));
    assert_eq!(messages.len(), last + 2);
}

#[test]
fn an_enter_plan_mode_result_is_followed_by_the_plan_mode_and_list_reminders() {
    let r = reminders();
    let todos = json!({"todos": [{"content": "Read the code", "status": "in_progress", "priority": "high"}]});
    let mut messages: Vec<Value> = turn("t", "TodoWrite", &todos).into();
    messages.extend(turn("p", "EnterPlanMode", &json!({})));
    messages[3]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    r.add(&mut messages);
    let blocks = messages[3]["content"].as_array().expect("blocks");
    assert_eq!(blocks.len(), 3);
    assert_eq!(
        blocks[0],
        json!({"type": "tool_result", "tool_use_id": "p", "content": "ok"})
    );
    assert_eq!(blocks[1], json!({"type": "text", "text": r.plan_mode}));
    let list = blocks[2]["text"].as_str().expect("list");
    assert!(list.starts_with("<system-reminder>\n"), "{list}");
    assert!(list.ends_with("\n\n[1. [in_progress] Read the code]\n</system-reminder>"));
    assert_eq!(blocks[2]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(messages.len(), 4, "no staleness reminder yet");
}

#[test]
fn without_a_list_plan_mode_shows_an_empty_one() {
    let r = reminders();
    let mut messages: Vec<Value> = turn("p", "EnterPlanMode", &json!({})).into();
    r.add(&mut messages);
    let list = messages[1]["content"][2]["text"].as_str().expect("list");
    assert!(list.ends_with("\n\n[]\n</system-reminder>"), "{list}");
    assert!(messages[1]["content"][2].get("cache_control").is_none());
}

#[test]
fn nothing_changes_on_the_chat_wire() {
    let mut messages = vec![json!({"role": "user", "content": "Plan the fix"})];
    for n in 0..11 {
        let name = if n == 0 { "EnterPlanMode" } else { "Bash" };
        let id = format!("c{n}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": "{\"command\":\"ls\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "ok"}));
    }
    let tools = json!([{"type": "function", "function": {"name": "Bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
    let request = json!({"model": "glm-4.6", "messages": messages, "tools": tools});
    let sent = body(&prepare(
        "zcode",
        &request,
        &[("x-harness-client", "claude-code")],
    ));
    let out = sent["messages"].as_array().expect("messages");
    assert!(out.iter().skip(1).all(|m| m["role"] != "system"));
    assert!(
        out.iter()
            .all(|m| m["role"] != "tool" || m["content"] == "ok")
    );
    let text = sent.to_string();
    let r = reminders();
    for reminder in [&r.plan_mode, &r.unused, &r.list(None)] {
        let first = reminder.lines().nth(1).expect("a line after the tag");
        assert!(!text.contains(first), "{first}");
    }
}
