//! Claude Code's todo reminders (full profile): once ten tool results and assistant texts have
//! gone by since the task tools were last used, the result that makes it ten gets a reminder
//! appended: the list as the last `TodoWrite` left it, or, when the conversation never wrote
//! one, the reminder that the task tools exist. Once per stretch: a task tool's result starts the
//! count again. Pure: it reads and edits the messages as built.

use serde_json::Value;

/// The tools whose results mean the task list was looked after.
const TASK_TOOLS: [&str; 5] = [
    "TodoWrite",
    "TaskCreate",
    "TaskUpdate",
    "TaskList",
    "TaskGet",
];

/// How many results and texts go by before the reminder.
const STALE_AFTER: usize = 10;

/// The reminder texts: the opening of the list reminder, and the unused-tools one.
pub struct Texts<'a> {
    pub list: &'a str,
    pub unused: &'a str,
}

/// Appends the reminder where the count reaches ten, once per stretch.
pub fn remind(messages: &mut [Value], texts: &Texts<'_>) {
    let mut tools: Vec<(String, String)> = Vec::new();
    let mut list: Option<String> = None;
    let (mut count, mut fired) = (0, false);
    for message in messages.iter_mut() {
        let Some(blocks) = message["content"].as_array_mut() else {
            continue;
        };
        for block in blocks {
            match block["type"].as_str() {
                Some("tool_use") => {
                    let name = block["name"].as_str().unwrap_or_default().to_owned();
                    if name == "TodoWrite" {
                        list = Some(snapshot(&block["input"]));
                    }
                    tools.push((block["id"].as_str().unwrap_or_default().to_owned(), name));
                }
                Some("tool_result") => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    let tool = tools.iter().find(|(t, _)| t == id).map(|(_, n)| n.as_str());
                    if tool.is_some_and(|t| TASK_TOOLS.contains(&t)) {
                        (count, fired) = (0, false);
                        continue;
                    }
                    count += 1;
                    if count >= STALE_AFTER && !fired {
                        fired = true;
                        append(block, &reminder(list.as_deref(), texts));
                    }
                }
                _ => {}
            }
        }
        // An assistant's text counts as a step too.
        if message["role"] == "assistant"
            && message["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "text"))
        {
            count += 1;
        }
    }
}

fn reminder(list: Option<&str>, texts: &Texts<'_>) -> String {
    match list {
        Some(list) => format!("{}\n[{list}]\n</system-reminder>", texts.list),
        None => texts.unused.to_owned(),
    }
}

/// The list a `TodoWrite` call wrote: `1. [status] content`, one a line.
fn snapshot(input: &Value) -> String {
    input["todos"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(n, todo)| {
            let status = todo["status"].as_str().unwrap_or("pending");
            let content = todo["content"].as_str().unwrap_or("");
            format!("{}. [{status}] {content}", n + 1)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn append(block: &mut Value, reminder: &str) {
    if let Some(text) = block["content"].as_str() {
        block["content"] = Value::String(format!("{text}\n\n{reminder}"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(id: &str, tool: &str, input: &Value) -> [Value; 2] {
        [
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]}),
        ]
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

    #[test]
    fn the_tenth_stale_result_gets_the_list_once() {
        let todos = json!({"todos": [{"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
            {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]});
        let mut messages: Vec<Value> = turn("t0", "TodoWrite", &todos).into();
        for n in 1..=12 {
            messages.extend(turn(&format!("b{n}"), "Bash", &json!({"command": "ls"})));
        }
        remind(&mut messages, &TEXTS);
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
        let mut messages = Vec::new();
        for n in 1..=9 {
            messages.extend(turn(&format!("b{n}"), "Bash", &json!({})));
        }
        messages.extend(turn("t", "TaskList", &json!({})));
        for n in 10..=19 {
            messages.extend(turn(&format!("b{n}"), "Read", &json!({})));
        }
        remind(&mut messages, &TEXTS);
        let results = results(&messages);
        assert_eq!(results.iter().filter(|r| *r != "ok").count(), 1);
        assert_eq!(results[19], "ok\n\nUNUSED");
    }
}
