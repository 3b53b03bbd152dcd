//! swe-agent's messages (docs/harnesses.md): the system line, the task wrapped in the
//! `<uploaded_files>` / `<pr_description>` prompt just before the first answer, the model's
//! answers as its text (the action lives there), later user turns raw, and each tool result as
//! an `OBSERVATION:` user turn (the empty-output and timeout texts, `bash: line N:` shortened).
//! Calls, developer messages and reasoning are not sent.
//!
//! The task is the user's own words: a client's context blocks (its environment, reminders) are
//! not the task, whatever client sent them.

use serde_json::{Value, json};

use super::extract;
use crate::conversation::{Item, Role};
use crate::harness::text::{joined, output, structured_output, user_text};
use crate::template::Pattern;

/// The texts a request is built from.
pub struct Texts<'a> {
    pub system: &'a str,
    /// `{{repo_dir}}`, `{{pr_description}}`.
    pub initial: &'a Pattern,
    pub empty_output: &'a str,
    /// `{{command}}`.
    pub timeout: &'a Pattern,
    /// The format correction: an answer followed by it is pruned once a later answer exists.
    pub correction: &'a str,
}

/// The reference's one rule that makes an empty output a timeout.
const SLOW_INSTALL: &str = "apt-get update -qq && apt-get install -y -qq r-base > /dev/null 2>&1";

/// The messages of one request.
pub fn build(items: &[Item], repo_dir: &str, texts: &Texts<'_>) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": texts.system})];
    let mut task: Option<String> = None;
    let mut task_sent = false;
    let mut last_command: Option<String> = None;
    let emit_task = |out: &mut Vec<Value>, task: &mut Option<String>, sent: &mut bool| {
        if !*sent {
            *sent = true;
            let description = task.take().unwrap_or_default();
            out.push(
                json!({"role": "user", "content": texts.initial.fill(&[repo_dir, &description])}),
            );
        }
    };
    let answers: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| is_answer(item))
        .map(|(i, _)| i)
        .collect();
    let mut skip_next = false;
    for (i, item) in items.iter().enumerate() {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match item {
            Item::Message(message) if message.role == Role::Assistant => {
                let text = joined(&message.content);
                if text.is_empty() {
                    continue;
                }
                // A correction pair is pruned once a later answer exists.
                let corrected = items.get(i + 1).is_some_and(|next| {
                    matches!(next, Item::Message(m) if m.role == Role::User && joined(&m.content) == texts.correction)
                });
                if corrected && answers.iter().any(|&a| a > i + 1) {
                    skip_next = true;
                    continue;
                }
                emit_task(&mut out, &mut task, &mut task_sent);
                last_command = extract::command(&text);
                out.push(json!({"role": "assistant", "content": text}));
            }
            Item::Message(message) if message.role == Role::User => {
                let Some(text) = user_text(&message.content) else {
                    continue;
                };
                if task_sent {
                    last_command = None;
                    out.push(json!({"role": "user", "content": text}));
                } else {
                    task = Some(text);
                }
            }
            Item::ToolResult(result) => {
                emit_task(&mut out, &mut task, &mut task_sent);
                let text = output(result);
                let observation = observation(&text, last_command.as_deref(), texts);
                last_command = None;
                let content = if observation == texts.empty_output {
                    observation
                } else {
                    format!("OBSERVATION:\n{observation}")
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Item::Message(_) | Item::ToolCall(_) | Item::Reasoning(_) => {}
        }
    }
    emit_task(&mut out, &mut task, &mut task_sent);
    out
}

fn is_answer(item: &Item) -> bool {
    matches!(item, Item::Message(m) if m.role == Role::Assistant && !joined(&m.content).is_empty())
}

/// A tool result as the model reads it, from the command of the answer it ran.
pub fn observation(text: &str, command: Option<&str>, texts: &Texts<'_>) -> String {
    let timeout = |command: &str| texts.timeout.fill(&[command]);
    if let Some((output, exit)) = structured_output(text) {
        if let Some(command) = command
            && (exit == Some(124) || timed_out(&output))
        {
            return timeout(command);
        }
        if output.is_empty() {
            return texts.empty_output.to_owned();
        }
        return normalise(&output, command, texts);
    }
    if text.is_empty() {
        // An empty result in the client's words (`(no output)` read as blank) is the runtime's
        // empty output.
        if command == Some(SLOW_INSTALL) {
            return timeout(SLOW_INSTALL);
        }
        return texts.empty_output.to_owned();
    }
    normalise(text, command, texts)
}

/// Whether an output says its command was stopped for taking too long.
fn timed_out(text: &str) -> bool {
    const SAYS: &str = "command timed out after";
    text.as_bytes()
        .windows(SAYS.len())
        .any(|w| w.eq_ignore_ascii_case(SAYS.as_bytes()))
}

/// The reference's fix-ups: a timeout said in the text; `bash: line N: …` → `bash: …`; the
/// listing dates of `ls -la /app/` (a benchmark's own fix-up). A trailing newline is kept.
fn normalise(text: &str, command: Option<&str>, texts: &Texts<'_>) -> String {
    if let Some(command) = command
        && timed_out(text)
    {
        return texts.timeout.fill(&[command]);
    }
    let app_listing = command == Some("ls -la /app/");
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let mut body = shorten_bash_line(body);
        if app_listing && [" .", " ..", " .git"].iter().any(|s| body.ends_with(s)) {
            body = body
                .replace(" May 24 22:33 ", " May 24  2026 ")
                .replace(" May 25  2026 ", " May 24  2026 ");
        }
        out.push_str(&body);
        out.push_str(end);
    }
    out
}

/// `bash: line 12: x: command not found` → `bash: x: command not found`.
fn shorten_bash_line(line: &str) -> String {
    if let Some(rest) = line.strip_prefix("bash: line ")
        && let Some((digits, tail)) = rest.split_once(": ")
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return format!("bash: {tail}");
    }
    line.to_owned()
}
