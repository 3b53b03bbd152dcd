//! `swe-agent` (docs/harnesses.md): SWE-agent's text protocol. No tools go
//! upstream: the model writes a discussion and one command, and the proxy reads the command out
//! of the text (`extract`), then hands the client a call of its own tool: a shell command → its
//! shell (30 s), a `str_replace_editor` line → its read / write / edit (`editor`), `submit` → the
//! turn ends with the model's text. An answer with no command gets SWE-agent's format correction,
//! sent upstream by the proxy (`routes::actions`). The body is `{model, messages, temperature: 1.0,
//! top_p: 0.95}`: no `stream`, no tools.
//!
//! Its tool set (`prompts/swe-agent/tools.json`, described by `profiles/swe-agent.toml`) is what
//! the model's actions become, in the neutral forms; it is never offered upstream.

mod editor;
pub mod extract;
mod messages;

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use super::family::context::Context;
use super::family::{Common, ToolSet, translate};
use super::text::{self, require_shell, shell_calls};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::clients::capability::Capability;
use crate::conversation::Conversation;
use crate::conversation::action::{
    ActionReader, Answer, Attempts, HarnessCall, Retry, RetryKind, Verdict,
};
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("swe-agent/system.md");
const INITIAL: Builtin = prompt_file!("swe-agent/initial.md");
const CORRECTION: Builtin = prompt_file!("swe-agent/format_correction.md");
const EMPTY_OUTPUT: Builtin = prompt_file!("swe-agent/empty_output.md");
const TIMEOUT: Builtin = prompt_file!("swe-agent/timeout.md");
const EDITOR_ERROR: Builtin = prompt_file!("swe-agent/editor_error.md");
const NOT_RUN: Builtin = prompt_file!("swe-agent/not_run.md");
const TOOLS: Builtin = prompt_file!("swe-agent/tools.json");

/// The shell timeout the reference gives a command.
const SHELL_TIMEOUT_MS: u64 = 30_000;

pub struct SweAgent {
    common: Common,
    texts: Arc<Texts>,
    tools: ToolSet,
}

/// swe-agent's texts, bound at start-up.
struct Texts {
    system: String,
    /// `{{repo_dir}}`, `{{pr_description}}`.
    initial: Pattern,
    correction: String,
    empty_output: String,
    /// `{{command}}`.
    timeout: Pattern,
    /// `{{error}}`: an editor line that cannot be carried out.
    editor_error: Pattern,
    /// `{{action}}`: an action the client has no tool for.
    not_run: Pattern,
}

impl SweAgent {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let read = |file: &Builtin| setup.prompts.read(file);
        let texts = Texts {
            system: read(&SYSTEM)?.plain()?,
            initial: read(&INITIAL)?.pattern(&["repo_dir", "pr_description"])?,
            correction: read(&CORRECTION)?.plain()?,
            empty_output: read(&EMPTY_OUTPUT)?.plain()?,
            timeout: read(&TIMEOUT)?.pattern(&["command"])?,
            editor_error: read(&EDITOR_ERROR)?.pattern(&["error"])?,
            not_run: read(&NOT_RUN)?.pattern(&["action"])?,
        };
        Ok(Self {
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("swe-agent"))?,
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
        let texts = &self.texts;
        let messages = messages::build(
            &items,
            &context.cwd,
            &messages::Texts {
                system: &texts.system,
                initial: &texts.initial,
                empty_output: &texts.empty_output,
                timeout: &texts.timeout,
                correction: &texts.correction,
            },
        );
        let body = json!({"model": conversation.model, "messages": messages,
            "temperature": 1.0, "top_p": 0.95});
        let harness_tools = self.tools.harness_tools();
        let tool = |capability| {
            harness_tools
                .for_capability(capability)
                .map(|t| t.name.clone())
        };
        let reader = Reader {
            texts: self.texts.clone(),
            cwd: context.cwd,
            shell,
            read: tool(Capability::Read),
            write: tool(Capability::Write),
            edit: tool(Capability::Edit),
        };
        text::prepared(&body, bridge, &conversation, Arc::new(reader))
    }
}

impl Harness for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
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

/// swe-agent's answer rules for one request.
struct Reader {
    texts: Arc<Texts>,
    cwd: String,
    shell: String,
    read: Option<String>,
    write: Option<String>,
    edit: Option<String>,
}

impl Reader {
    /// A turn the model reads as the observation of its command.
    fn observation(&self, text: &str) -> Retry {
        Retry {
            kind: RetryKind::Correction,
            keep_answer: true,
            turn: format!("OBSERVATION:\n{text}"),
            replaces_earlier: false,
        }
    }
}

impl ActionReader for Reader {
    fn harness(&self) -> &'static str {
        "swe-agent"
    }

    fn read(&self, answer: &Answer<'_>, _attempts: Attempts) -> Verdict {
        let Some(command) = extract::command(answer.text) else {
            return Verdict::Retry(Retry {
                kind: RetryKind::Correction,
                keep_answer: true,
                turn: self.texts.correction.clone(),
                replaces_earlier: true,
            });
        };
        if command == "submit" {
            return Verdict::Final;
        }
        if command.starts_with("str_replace_editor ") {
            let tools = editor::EditorTools {
                shell: &self.shell,
                read: self.read.as_deref(),
                write: self.write.as_deref(),
                edit: self.edit.as_deref(),
            };
            return match editor::calls(&command, &self.cwd, &tools, SHELL_TIMEOUT_MS) {
                Ok(calls) if calls.is_empty() => {
                    Verdict::Retry(self.observation(&self.texts.not_run.fill(&[&command])))
                }
                Ok(calls) => Verdict::Act(calls),
                Err(editor::EditorError::Usage(error)) => {
                    Verdict::Retry(self.observation(&self.texts.editor_error.fill(&[&error])))
                }
                Err(editor::EditorError::Undo) => {
                    Verdict::Retry(self.observation(&self.texts.not_run.fill(&[&command])))
                }
            };
        }
        Verdict::Act(shell_calls(&self.shell, &command, Some(SHELL_TIMEOUT_MS)))
    }

    fn cannot_run(&self, action: &HarnessCall) -> Retry {
        self.observation(&self.texts.not_run.fill(&[&action.name]))
    }
}

#[cfg(test)]
mod tests;
