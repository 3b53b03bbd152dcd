//! `terminus-2` (docs/harnesses.md): Terminal-Bench's agent. No system message,
//! no tools: the task goes wrapped in the JSON-keystroke instructions with the terminal's first
//! state, the model answers `{analysis, plan, commands: [{keystrokes, duration}], task_complete}`,
//! and the proxy reads it (`parse`) and hands the client one call of its own shell with the
//! keystrokes as one command (`keys`). An answer that does not parse gets terminus-2's
//! parse-error turn; the first `task_complete` gets its confirmation turn (the commands of that
//! answer are not run), the second ends the turn; both are sent upstream by the proxy
//! (`routes::actions`). The body is `{messages, model, temperature: 0.7}`: no `stream`.
//!
//! Only the Action request is built: the context hand-off kinds (Summary, Questions,
//! AnswerQuestions, Handoff) need a history summary the client does not send (docs/harnesses.md,
//! "Not emulated"). The terminal's prompt names the client's working directory (else the
//! reference's `/app`).

mod keys;
mod messages;
pub mod parse;

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use super::family::context::Context;
use super::family::{Common, ToolSet, translate};
use super::text::{self, require_shell, shell_calls};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::action::{
    ActionReader, Answer, Attempts, HarnessCall, Retry, RetryKind, Verdict,
};
use crate::conversation::{Conversation, Item, Role};
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

pub use keys::{Batch, batch};

const INITIAL: Builtin = prompt_file!("terminus-2/initial.md");
const TERMINAL_STATE: Builtin = prompt_file!("terminus-2/terminal_state.md");
const PARSE_ERROR: Builtin = prompt_file!("terminus-2/parse_error.md");
const CONFIRM: Builtin = prompt_file!("terminus-2/confirm.md");
const LIMITED: Builtin = prompt_file!("terminus-2/limited.md");
const TOOLS: Builtin = prompt_file!("terminus-2/tools.json");

/// The empty rows under the terminal's first prompt.
const EMPTY_ROWS: usize = 41;
/// The working directory of the reference's terminal.
const REFERENCE_CWD: &str = "/app";

pub struct Terminus2 {
    common: Common,
    texts: Arc<Texts>,
    tools: ToolSet,
}

/// terminus-2's texts, bound at start-up.
struct Texts {
    /// `{{instruction}}`, `{{terminal_state}}`.
    initial: Pattern,
    /// `{{cwd}}`: the terminal's prompt line.
    terminal_state: Pattern,
    /// `{{feedback}}`.
    parse_error: Pattern,
    /// `{{terminal_output}}`.
    confirm: Pattern,
    /// `{{limit}}`, `{{omitted}}`.
    limited: Pattern,
}

impl Texts {
    /// What a parse-error turn starts with (its text before `{{feedback}}`).
    fn parse_error_start(&self) -> &str {
        self.parse_error.texts().next().unwrap_or_default()
    }

    /// What a confirmation turn says after the terminal state: a request that holds it has had
    /// its confirmation.
    fn confirm_end(&self) -> &str {
        self.confirm.texts().last().unwrap_or_default()
    }
}

impl Terminus2 {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let read = |file: &Builtin| setup.prompts.read(file);
        let texts = Texts {
            initial: read(&INITIAL)?.pattern(&["instruction", "terminal_state"])?,
            terminal_state: read(&TERMINAL_STATE)?.pattern(&["cwd"])?,
            parse_error: read(&PARSE_ERROR)?.pattern(&["feedback"])?,
            confirm: read(&CONFIRM)?.pattern(&["terminal_output"])?,
            limited: read(&LIMITED)?.pattern(&["limit", "omitted"])?,
        };
        Ok(Self {
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("terminus-2"))?,
            texts: Arc::new(texts),
            common,
        })
    }

    fn body(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let conversation = request.conversation;
        let mut bridge = self
            .common
            .bridge(&conversation, request.headers, &self.tools)?;
        let shell = require_shell(&bridge, &self.tools, self.name())?;
        // No tools go upstream: a client tool the harness has no action for is not sent.
        let kept = bridge.kept();
        bridge.drop_tools(kept.iter().map(String::as_str));
        let items = translate(&conversation.items, &bridge);
        let context = Context::of(&items, request.headers, request.now, &self.common.context);
        let cwd = if context.cwd == "." {
            REFERENCE_CWD
        } else {
            &context.cwd
        };
        let mut terminal_state = self.texts.terminal_state.fill(&[cwd]);
        terminal_state.push_str(&"\n".repeat(EMPTY_ROWS));
        let messages = messages::build(
            &items,
            &messages::Texts {
                initial: &self.texts.initial,
                terminal_state: &terminal_state,
                limited: &self.texts.limited,
                parse_error_start: self.texts.parse_error_start(),
            },
        );
        let body = json!({"messages": messages, "model": conversation.model, "temperature": 0.7});
        let confirm_end = self.texts.confirm_end();
        let confirmed = !confirm_end.trim().is_empty()
            && items.iter().any(|item| {
                matches!(item, Item::Message(m) if m.role == Role::User
                    && text::joined(&m.content).contains(confirm_end.trim()))
            });
        let reader = Reader {
            texts: self.texts.clone(),
            shell,
            terminal_state,
            confirmed,
        };
        text::prepared(&body, bridge, &conversation, Arc::new(reader))
    }
}

impl Harness for Terminus2 {
    fn name(&self) -> &'static str {
        "terminus-2"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.common.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        if self.common.is_title_request(&request.conversation) {
            return Prepared::unchanged(&request);
        }
        self.body(request)
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        _headers: &mut http::HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        self.common.title_request(ask)
    }
}

/// terminus-2's answer rules for one request.
struct Reader {
    texts: Arc<Texts>,
    shell: String,
    terminal_state: String,
    /// The request already holds a confirmation turn (the reference's `pending_completion`).
    confirmed: bool,
}

impl ActionReader for Reader {
    fn harness(&self) -> &'static str {
        "terminus-2"
    }

    fn read(&self, answer: &Answer<'_>, attempts: Attempts) -> Verdict {
        let parsed = match parse::parse(answer.text) {
            Ok(parsed) => parsed,
            Err(error) => {
                let mut feedback = format!("ERROR: {}", error.error);
                if !error.warnings.is_empty() {
                    feedback.push_str("\nWARNINGS: ");
                    feedback.push_str(&error.warnings);
                }
                return Verdict::Retry(Retry {
                    kind: RetryKind::Correction,
                    keep_answer: true,
                    turn: self.texts.parse_error.fill(&[&feedback]),
                    replaces_earlier: false,
                });
            }
        };
        if parsed.task_complete {
            if self.confirmed || attempts.confirmations > 0 {
                return Verdict::Final;
            }
            return Verdict::Retry(Retry {
                kind: RetryKind::Confirmation,
                keep_answer: true,
                turn: self.texts.confirm.fill(&[&self.terminal_state]),
                replaces_earlier: false,
            });
        }
        if parsed.commands.is_empty() {
            return Verdict::Final;
        }
        let batch = keys::batch(&parsed.commands);
        Verdict::Act(shell_calls(
            &self.shell,
            &batch.command,
            Some(batch.timeout_ms),
        ))
    }

    fn cannot_run(&self, _action: &HarnessCall) -> Retry {
        // The shell was checked when the request was prepared; a call it still cannot take is
        // the model's to rephrase.
        Retry {
            kind: RetryKind::Correction,
            keep_answer: true,
            turn: self.texts.parse_error.fill(&[
                "ERROR: the client's shell could not take these keystrokes as one command",
            ]),
            replaces_earlier: false,
        }
    }
}

#[cfg(test)]
mod tests;
