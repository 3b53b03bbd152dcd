//! ZCode's reminders inside `messages` on the Messages wire (docs/harnesses.md; the spec's zcode
//! section), added to the messages Claude Code's builder made:
//!
//! - todo staleness (`claude_code::todo`, ZCode's rules): every ten steps since `TodoWrite` or
//!   `TodoRead` was last used, a `system` message after the user message holding the batch, its
//!   `<system-reminder>` tags stripped: the list reminder, or the unused one when no list was
//!   written;
//! - plan mode: an `EnterPlanMode` result is followed, in its user message, by two text blocks:
//!   the plan-mode reminder, then the list reminder with the list as it stood at that point
//!   (`[]` when none was written), as the reference's blocks after the result. The message's one
//!   cache breakpoint, when on that result, moves to the list reminder that now follows it.
//!
//! The `system` messages carry their text as a string, as the skills message does. Pure: the
//! words come from the prompt files.

use serde_json::{Value, json};

use crate::harness::SetupError;
use crate::harness::claude_code::todo;
use crate::prompt_file;
use crate::prompts::{Builtin, Prompts};
use crate::template::Pattern;

const PLAN_MODE: Builtin = prompt_file!("zcode/plan-mode-reminder.md");
const TODO_LIST: Builtin = prompt_file!("zcode/todo-list-reminder.md");
const TODO_UNUSED: Builtin = prompt_file!("zcode/todo-unused-reminder.md");

/// The texts of ZCode's reminders.
pub struct Reminders {
    /// After an `EnterPlanMode` result.
    plan_mode: String,
    /// `todos`: the list in brackets, `[1. [status] content` … `]`.
    list: Pattern,
    /// When the conversation wrote no list.
    unused: String,
}

impl Reminders {
    pub fn from_prompts(prompts: &Prompts) -> Result<Self, SetupError> {
        Ok(Self {
            plan_mode: prompts.read(&PLAN_MODE)?.plain()?,
            list: prompts.read(&TODO_LIST)?.pattern(&["todos"])?,
            unused: prompts.read(&TODO_UNUSED)?.plain()?,
        })
    }

    /// Adds the todo-staleness reminders, then the plan-mode ones (whose blocks are no user's
    /// words, so they are not counted as a step).
    pub fn add(&self, messages: &mut Vec<Value>) {
        todo::remind(messages, &todo::ZCODE, &|list| match list {
            Some(_) => self.list(list),
            None => self.unused.clone(),
        });
        self.plan_mode(messages);
    }

    fn list(&self, list: Option<&str>) -> String {
        self.list
            .fill(&[&format!("[{}]", list.unwrap_or_default())])
    }

    fn plan_mode(&self, messages: &mut [Value]) {
        let mut calls = todo::Calls::default();
        for message in messages {
            calls.see(message);
            let Some(blocks) = message["content"].as_array_mut() else {
                continue;
            };
            let mut at = 0;
            while at < blocks.len() {
                if blocks[at]["type"] == "tool_result"
                    && calls.tool(&blocks[at]) == Some("EnterPlanMode")
                {
                    let breakpoint = blocks[at]
                        .as_object_mut()
                        .and_then(|b| b.remove("cache_control"));
                    let mut list = json!({"type": "text", "text": self.list(calls.list())});
                    if let Some(breakpoint) = breakpoint {
                        list["cache_control"] = breakpoint;
                    }
                    let plan = json!({"type": "text", "text": self.plan_mode});
                    blocks.splice(at + 1..at + 1, [plan, list]);
                    at += 2;
                }
                at += 1;
            }
        }
    }
}

#[cfg(test)]
#[path = "reminders_tests.rs"]
mod tests;
