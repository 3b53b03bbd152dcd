//! terminus-2's messages for its Action request (docs/harnesses.md): no system message; the task
//! (the last user text before the first answer) wrapped in the JSON-keystroke instructions with
//! the terminal's first state, just before the first answer or result; the model's answers as
//! their text; later user turns raw; each tool result as a user turn with the terminal's output
//! (the client's output has no tmux markers, so it is read as a screen — its last 40
//! lines, padded to 40 — then bounded to 10000 bytes on character boundaries).

use serde_json::{Value, json};

use crate::conversation::{Item, Role};
use crate::harness::text::{clip, clip_start, joined, output, structured_output, user_text};
use crate::template::Pattern;

/// The most bytes of terminal output one turn carries.
pub const OUTPUT_LIMIT: usize = 10_000;
/// The rows of the screen a plain output is read as.
const SCREEN_ROWS: usize = 40;

/// The texts a request is built from.
pub struct Texts<'a> {
    /// `{{instruction}}`, `{{terminal_state}}`.
    pub initial: &'a Pattern,
    pub terminal_state: &'a str,
    /// `{{limit}}`, `{{omitted}}`.
    pub limited: &'a Pattern,
    /// What a parse-error turn starts with: the tool output after it is not sent.
    pub parse_error_start: &'a str,
}

/// The messages of one request.
pub fn build(items: &[Item], texts: &Texts<'_>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut task: Option<String> = None;
    let mut task_sent = false;
    let mut skip_output = false;
    let emit_task = |out: &mut Vec<Value>, task: &mut Option<String>, sent: &mut bool| {
        if !*sent {
            *sent = true;
            let instruction = task.take().unwrap_or_default();
            out.push(json!({"role": "user",
                "content": texts.initial.fill(&[&instruction, texts.terminal_state])}));
        }
    };
    for item in items {
        match item {
            Item::Message(message) if message.role == Role::Assistant => {
                let text = joined(&message.content);
                if text.is_empty() {
                    continue;
                }
                emit_task(&mut out, &mut task, &mut task_sent);
                out.push(json!({"role": "assistant", "content": text}));
            }
            Item::Message(message) if message.role == Role::User => {
                let Some(text) = user_text(&message.content) else {
                    continue;
                };
                if task_sent {
                    if !texts.parse_error_start.is_empty()
                        && text.starts_with(texts.parse_error_start)
                    {
                        skip_output = true;
                    }
                    out.push(json!({"role": "user", "content": text}));
                } else {
                    task = Some(text);
                }
            }
            Item::ToolResult(result) => {
                emit_task(&mut out, &mut task, &mut task_sent);
                if std::mem::take(&mut skip_output) {
                    continue;
                }
                let text = output(result);
                out.push(json!({"role": "user", "content": terminal_output(&text, texts.limited)}));
            }
            Item::Message(_) | Item::ToolCall(_) | Item::Reasoning(_) => {}
        }
    }
    emit_task(&mut out, &mut task, &mut task_sent);
    out
}

/// A tool result as the terminal's screen: the runtime's `output` when it is structured, its last
/// 40 lines right-trimmed and padded to 40, then bounded.
pub fn terminal_output(text: &str, limited: &Pattern) -> String {
    let output = structured_output(text).map_or_else(|| text.to_owned(), |(output, _)| output);
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let shown = &lines[lines.len().saturating_sub(SCREEN_ROWS)..];
    let mut screen = String::with_capacity(output.len().min(OUTPUT_LIMIT) + SCREEN_ROWS);
    for line in shown {
        screen.push_str(line.trim_end());
        screen.push('\n');
    }
    for _ in shown.len()..SCREEN_ROWS {
        screen.push('\n');
    }
    limit(&screen, limited)
}

/// Over `OUTPUT_LIMIT` bytes: the first and last half of it, and what was left out between.
pub fn limit(text: &str, limited: &Pattern) -> String {
    if text.len() <= OUTPUT_LIMIT {
        return text.to_owned();
    }
    let half = OUTPUT_LIMIT / 2;
    let (first, last) = (clip(text, half), clip_start(text, half));
    let omitted = text.len() - first.len() - last.len();
    format!(
        "{first}\n{}\n{last}",
        limited.fill(&[&OUTPUT_LIMIT.to_string(), &omitted.to_string()])
    )
}
