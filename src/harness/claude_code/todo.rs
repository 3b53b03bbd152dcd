//! The todo reminders of the agents built on Claude Code's messages (docs/harnesses.md; the
//! spec's claude-code messages and zcode sections). Steps are counted since the list was last
//! looked after; at ten, a reminder: the list as the last `TodoWrite` left it, or, when the
//! conversation never wrote one (or wrote an empty one), the reminder that the tools exist. A
//! result of a tool nobody called (no `tool_use` with its id) counts for nothing. Each agent's
//! rules (`Rules`) say the rest:
//!
//! - claude-code: the task tools (`TodoWrite`, `TaskCreate`, `TaskUpdate`, `TaskList`, `TaskGet`)
//!   start the count again; the other tools' results and the assistant's texts are steps; once
//!   per stretch, appended to the text of the result that makes it ten.
//! - zcode: `TodoWrite` and `TodoRead` start the count again; the other tools' results are steps,
//!   and so is each user message with the user's own words (the spec names only tool results; the
//!   reference's counter takes a user's follow-up as a step too, and we follow it); every ten
//!   steps (the count starts again at each reminder), at most one per batch of results, as a
//!   `system` message of its own right after the user message holding the batch, its
//!   `<system-reminder>` tags stripped.
//!
//! Pure: it reads and edits the messages as built. The words come in.

use serde_json::{Value, json};

/// How many steps go by before the reminder.
const STALE_AFTER: usize = 10;

/// One agent's rules for its todo reminders.
pub struct Rules {
    /// The tools whose results mean the list was looked after: they start the count again.
    pub tools: &'static [&'static str],
    /// What counts as a step besides the other tools' results.
    pub step: Step,
    /// Every ten steps (the count starts again at each reminder), or once until the list is
    /// looked after.
    pub repeat: bool,
    /// Where the reminder goes.
    pub placement: Placement,
}

/// What counts as a step besides a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// An assistant message with text.
    AssistantText,
    /// A user message with anything but tool results: the user's own words.
    UserWords,
}

/// Where a reminder goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Appended to the text of the result that makes it ten, after a blank line.
    Appended,
    /// A `system` message right after the user message holding the batch, tags stripped.
    SystemAfterBatch,
}

/// Claude Code's (full profile).
pub const CLAUDE_CODE: Rules = Rules {
    tools: &[
        "TodoWrite",
        "TaskCreate",
        "TaskUpdate",
        "TaskList",
        "TaskGet",
    ],
    step: Step::AssistantText,
    repeat: false,
    placement: Placement::Appended,
};

/// ZCode's.
pub const ZCODE: Rules = Rules {
    tools: &["TodoWrite", "TodoRead"],
    step: Step::UserWords,
    repeat: true,
    placement: Placement::SystemAfterBatch,
};

/// Claude Code's reminder texts: the opening of the list reminder, and the unused-tools one.
pub struct Texts<'a> {
    pub list: &'a str,
    pub unused: &'a str,
}

impl Texts<'_> {
    /// The reminder for `list` (`None`: never written): the opening, the list in brackets on the
    /// next line, the closing tag.
    pub fn reminder(&self, list: Option<&str>) -> String {
        match list {
            Some(list) => format!("{}\n[{list}]\n</system-reminder>", self.list),
            None => self.unused.to_owned(),
        }
    }
}

/// What the conversation's calls said so far: each call's tool, and the list the last
/// `TodoWrite` wrote.
#[derive(Default)]
pub struct Calls {
    tools: Vec<(String, String)>,
    list: Option<String>,
}

impl Calls {
    /// Takes in a message's `tool_use` blocks.
    pub fn see(&mut self, message: &Value) {
        for block in blocks(message).filter(|b| b["type"] == "tool_use") {
            let name = block["name"].as_str().unwrap_or_default().to_owned();
            if name == "TodoWrite" {
                self.list = snapshot(&block["input"]);
            }
            let id = block["id"].as_str().unwrap_or_default().to_owned();
            self.tools.push((id, name));
        }
    }

    /// The tool a `tool_result` block answers, if its call was seen.
    pub fn tool(&self, result: &Value) -> Option<&str> {
        let id = result["tool_use_id"].as_str()?;
        self.tools
            .iter()
            .find(|(call, _)| call == id)
            .map(|(_, name)| name.as_str())
    }

    /// The last list written (`1. [status] content`, one a line), unless none or an empty one.
    pub fn list(&self) -> Option<&str> {
        self.list.as_deref()
    }
}

/// Adds the reminders to `messages` as `rules` say; `reminder` gives the text for a list
/// (`Calls::list`).
pub fn remind(messages: &mut Vec<Value>, rules: &Rules, reminder: &dyn Fn(Option<&str>) -> String) {
    let mut count = Count::default();
    let mut at = 0;
    while at < messages.len() {
        count.calls.see(&messages[at]);
        let batch = count.results(&mut messages[at], rules, reminder);
        if rules.step.counts(&messages[at]) {
            count.steps += 1;
        }
        if let Some(text) = batch {
            messages.insert(
                at + 1,
                json!({"role": "system", "content": untagged(&text)}),
            );
            at += 1;
        }
        at += 1;
    }
}

/// The walk's state: the calls, the steps since the list was looked after, and whether the
/// stretch had its reminder.
#[derive(Default)]
struct Count {
    calls: Calls,
    steps: usize,
    fired: bool,
}

impl Count {
    /// Counts one message's results in order: an appended reminder goes in place, a batch's is
    /// returned.
    fn results(
        &mut self,
        message: &mut Value,
        rules: &Rules,
        reminder: &dyn Fn(Option<&str>) -> String,
    ) -> Option<String> {
        let mut batch = None;
        let blocks = message["content"].as_array_mut()?;
        for block in blocks.iter_mut().filter(|b| b["type"] == "tool_result") {
            let Some(tool) = self.calls.tool(block) else {
                continue;
            };
            if rules.tools.contains(&tool) {
                (self.steps, self.fired) = (0, false);
                continue;
            }
            self.steps += 1;
            if self.steps < STALE_AFTER || self.fired {
                continue;
            }
            let text = reminder(self.calls.list());
            if rules.repeat {
                self.steps = 0;
            } else {
                self.fired = true;
            }
            match rules.placement {
                Placement::Appended => append(block, &text),
                Placement::SystemAfterBatch => {
                    batch.get_or_insert(text);
                }
            }
        }
        batch
    }
}

impl Step {
    fn counts(self, message: &Value) -> bool {
        match self {
            Step::AssistantText => {
                message["role"] == "assistant" && blocks(message).any(|b| b["type"] == "text")
            }
            // A lone text is sent as a string.
            Step::UserWords => {
                message["role"] == "user"
                    && (message["content"].is_string()
                        || blocks(message).any(|b| b["type"] != "tool_result"))
            }
        }
    }
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message["content"].as_array().into_iter().flatten()
}

/// The list a `TodoWrite` call wrote: `1. [status] content`, one a line; `None` when empty.
fn snapshot(input: &Value) -> Option<String> {
    let lines: Vec<String> = input["todos"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(n, todo)| {
            let status = todo["status"].as_str().unwrap_or("pending");
            let content = todo["content"].as_str().unwrap_or("");
            format!("{}. [{status}] {content}", n + 1)
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn append(block: &mut Value, reminder: &str) {
    if let Some(text) = block["content"].as_str() {
        block["content"] = Value::String(format!("{text}\n\n{reminder}"));
    }
}

/// A reminder without its `<system-reminder>` tags, as a `system` message says it.
fn untagged(text: &str) -> &str {
    text.strip_prefix("<system-reminder>\n")
        .and_then(|t| t.strip_suffix("\n</system-reminder>"))
        .unwrap_or(text)
}

#[cfg(test)]
#[path = "todo_tests.rs"]
mod tests;
