use serde_json::json;

use super::*;

fn call(id: &str, tool: &str, input: &Value) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}]})
}

fn result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

fn turn(id: &str, tool: &str, input: &Value) -> [Value; 2] {
    [
        call(id, tool, input),
        json!({"role": "user", "content": [result(id)]}),
    ]
}

/// `count` `Bash` turns, ids `{prefix}1`…
fn bash_turns(prefix: &str, count: usize) -> Vec<Value> {
    (1..=count)
        .flat_map(|n| turn(&format!("{prefix}{n}"), "Bash", &json!({"command": "ls"})))
        .collect()
}

fn results(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

const TEXTS: Texts<'static> = Texts {
    list: "<system-reminder>\nLIST",
    unused: "UNUSED",
};

fn claude_code(messages: &mut Vec<Value>) {
    remind(messages, &CLAUDE_CODE, &|list| TEXTS.reminder(list));
}

/// ZCode's layout, tags included (the system message strips them).
fn zcode(messages: &mut Vec<Value>) {
    remind(messages, &ZCODE, &|list| match list {
        Some(list) => format!("<system-reminder>\nZLIST\n[{list}]\n</system-reminder>"),
        None => "<system-reminder>\nZUNUSED\n</system-reminder>".to_owned(),
    });
}

fn todos() -> Value {
    json!({"todos": [{"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]})
}

/// The positions of the `system` messages and their texts.
fn system(messages: &[Value]) -> Vec<(usize, &str)> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "system")
        .map(|(i, m)| (i, m["content"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn the_tenth_stale_result_gets_the_list_once() {
    let mut messages: Vec<Value> = turn("t0", "TodoWrite", &todos()).into();
    messages.extend(bash_turns("b", 12));
    claude_code(&mut messages);
    let results = results(&messages);
    let reminded: Vec<usize> = (0..results.len()).filter(|&i| results[i] != "ok").collect();
    assert_eq!(reminded, [10]);
    assert_eq!(
        results[10],
        "ok\n\n<system-reminder>\nLIST\n[1. [in_progress] Write tests\n2. [pending] Ship]\n</system-reminder>"
    );
}

#[test]
fn without_a_list_the_unused_reminder_and_a_task_tool_starts_the_count_again() {
    let mut messages = bash_turns("b", 9);
    messages.extend(turn("t", "TaskList", &json!({})));
    messages.extend(bash_turns("r", 10));
    claude_code(&mut messages);
    let results = results(&messages);
    assert_eq!(results.iter().filter(|r| *r != "ok").count(), 1);
    assert_eq!(results[19], "ok\n\nUNUSED");
}

#[test]
fn zcode_s_tenth_stale_result_is_followed_by_one_system_message_and_left_as_it_was() {
    let mut messages: Vec<Value> = turn("t0", "TodoWrite", &todos()).into();
    messages.extend(bash_turns("b", 10));
    zcode(&mut messages);
    assert!(results(&messages).iter().all(|r| r == "ok"));
    // The tenth Bash result is the 11th user message: messages[21]; its reminder follows it.
    assert_eq!(
        system(&messages),
        [(
            22,
            "ZLIST\n[1. [in_progress] Write tests\n2. [pending] Ship]"
        )]
    );
    assert_eq!(messages.len(), 23);
}

/// The spec's `build_messages_appends_stale_todo_reminder_after_tool_result_batch`: eight results
/// one by one, then a batch of two: the reminder after the batch, once.
#[test]
fn zcode_s_reminder_follows_the_whole_batch() {
    let mut messages = bash_turns("b", 8);
    messages.push(json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "r9", "name": "Read", "input": {}},
        {"type": "tool_use", "id": "r10", "name": "Read", "input": {}}]}));
    messages.push(json!({"role": "user", "content": [result("r9"), result("r10")]}));
    messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]}));
    zcode(&mut messages);
    assert_eq!(messages[17]["content"].as_array().map(Vec::len), Some(2));
    assert_eq!(system(&messages), [(18, "ZUNUSED")]);
    assert_eq!(messages[19]["role"], "assistant");
}

#[test]
fn zcode_reminds_every_ten_and_a_todo_tool_starts_the_count_again() {
    let mut messages = bash_turns("a", 9);
    messages.extend(turn("t", "TodoRead", &json!({})));
    messages.extend(bash_turns("b", 20));
    zcode(&mut messages);
    // 9 turns and TodoRead's: 20 messages; the 10th Bash result after them is messages[39], the
    // 20th messages[60] once the first reminder is in.
    assert_eq!(system(&messages), [(40, "ZUNUSED"), (61, "ZUNUSED")]);
}

#[test]
fn zcode_counts_the_user_s_follow_up_as_a_step() {
    let mut messages: Vec<Value> = turn("t0", "TodoWrite", &todos()).into();
    messages.push(json!({"role": "user", "content": "Continue the work."}));
    messages.extend(bash_turns("b", 9));
    zcode(&mut messages);
    assert_eq!(system(&messages).len(), 1);
    assert_eq!(
        messages.last().map(|m| m["role"].clone()),
        Some(json!("system"))
    );
}

#[test]
fn an_empty_list_counts_as_none_and_an_unknown_result_as_nothing() {
    let mut messages: Vec<Value> = turn("t0", "TodoWrite", &json!({"todos": []})).into();
    messages.extend(bash_turns("b", 9));
    messages.push(json!({"role": "user", "content": [result("nobody")]}));
    claude_code(&mut messages);
    assert!(results(&messages).iter().all(|r| r == "ok"));
    messages.extend(bash_turns("c", 1));
    claude_code(&mut messages);
    assert_eq!(
        results(&messages).last().map(String::as_str),
        Some("ok\n\nUNUSED")
    );
}
