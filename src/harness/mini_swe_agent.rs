//! `mini-swe-agent` (docs/harnesses.md): its tool-calling form. One system line; the first user
//! text wrapped in the "solve this issue" template with the system information (the client's OS,
//! the macOS `sed` note on Darwin); its own builder (text joined into the calls that follow it,
//! results as `tool` messages, reasoning in LiteLLM's two places); its one `bash{command}` tool
//! (`prompts/mini-swe-agent/tools.json`, `profiles/mini-swe-agent.toml`) plus the client's tools
//! with no counterpart; the body `{messages, model, tools}`, no `stream`.
//!
//! Its answer rule: every answer must call a tool. An answer of text alone is replaced by the "no
//! tool calls" turn, sent upstream by the proxy (`routes::actions`); the model's calls go to the
//! client as its own tools. The completion command (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`
//! alone) ends the turn with the model's text, as the real mini-swe-agent ends its task (the
//! reference does nothing special with it in production).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::family::context::Context;
use super::family::{Common, ToolSet, translate};
use super::text::{self, joined, require_shell, user_text};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::clients::contextual;
use crate::conversation::action::{
    ActionReader, Answer, Attempts, HarnessCall, Retry, RetryKind, Verdict,
};
use crate::conversation::{Conversation, Item, Role};
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("mini-swe-agent/system.md");
const INITIAL: Builtin = prompt_file!("mini-swe-agent/initial.md");
const SED_NOTE: Builtin = prompt_file!("mini-swe-agent/sed_note.md");
const NO_TOOL_CALL: Builtin = prompt_file!("mini-swe-agent/no_tool_call.md");
const TOOLS: Builtin = prompt_file!("mini-swe-agent/tools.json");

/// The command that ends a mini-swe-agent task.
pub const COMPLETE: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

pub struct MiniSweAgent {
    common: Common,
    system: String,
    /// `{{task}}`, `{{system_information}}`, `{{sed_note}}`.
    initial: Pattern,
    sed_note: String,
    no_tool_call: Arc<str>,
    tools: ToolSet,
}

impl MiniSweAgent {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let read = |file: &Builtin| setup.prompts.read(file);
        Ok(Self {
            system: read(&SYSTEM)?.plain()?,
            initial: read(&INITIAL)?.pattern(&["task", "system_information", "sed_note"])?,
            // Between the heading and its fence with no line break around it, as mini-swe-agent's
            // own template renders it (whitespace-trimming tags), so the note has no final newline.
            sed_note: read(&SED_NOTE)?.plain()?,
            no_tool_call: read(&NO_TOOL_CALL)?.plain()?.into(),
            tools: ToolSet::load(
                setup.prompts,
                &TOOLS,
                common.profiles.dialect("mini-swe-agent"),
            )?,
            common,
        })
    }

    fn body(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let conversation = request.conversation;
        let bridge = self
            .common
            .bridge(&conversation, request.headers, &self.tools)?;
        let shell = require_shell(&bridge, &self.tools, self.name())?;
        let items = translate(&conversation.items, &bridge);
        let context = Context::of(&items, request.headers, request.now, &self.common.context);
        let system_information = uname(&context.platform);
        let sed_note = if system_information == "Darwin" {
            self.sed_note.as_str()
        } else {
            ""
        };
        let wrap = |task: &str| self.initial.fill(&[task, &system_information, sed_note]);
        let mut messages = vec![json!({"role": "system", "content": self.system})];
        messages.extend(build(&items, &wrap));
        let tools = self
            .tools
            .offered(&conversation.tools, &bridge, self.common.config.tools)
            .into_values();
        let body = json!({"messages": messages, "model": conversation.model, "tools": tools});
        let reader = Reader {
            no_tool_call: self.no_tool_call.clone(),
            shell,
        };
        text::prepared(&body, bridge, &conversation, Arc::new(reader))
    }
}

/// What `uname -s` would say on the client's platform (its kernel version and machine are not
/// in the request).
fn uname(platform: &str) -> String {
    match platform {
        "linux" => "Linux".to_owned(),
        "darwin" | "macos" => "Darwin".to_owned(),
        "windows" | "win32" => "Windows_NT".to_owned(),
        "freebsd" => "FreeBSD".to_owned(),
        other => other.to_owned(),
    }
}

impl Harness for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
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

/// mini-swe-agent's builder.
struct Builder {
    out: Vec<Value>,
    /// Assistant text not yet sent.
    held: Option<String>,
    /// Calls not yet sent, and the text that goes with them.
    calls: Vec<Value>,
    texts: Vec<String>,
    reasoning: Option<String>,
    wrapped: bool,
}

fn build(items: &[Item], wrap: &dyn Fn(&str) -> String) -> Vec<Value> {
    let mut b = Builder {
        out: Vec::with_capacity(items.len()),
        held: None,
        calls: Vec::new(),
        texts: Vec::new(),
        reasoning: None,
        wrapped: false,
    };
    for item in items {
        match item {
            Item::Message(message) => match message.role {
                Role::User => {
                    let Some(text) = user_text(&message.content) else {
                        continue;
                    };
                    b.flush();
                    let content = if b.wrapped {
                        text
                    } else {
                        b.wrapped = true;
                        wrap(&text)
                    };
                    b.out.push(json!({"role": "user", "content": content}));
                }
                Role::Developer => {
                    let parts = message.content.text_parts();
                    if parts.iter().all(|p| {
                        text::is_developer_fragment(p) || contextual::is_contextual_text(p)
                    }) {
                        continue;
                    }
                    let text = joined(&message.content);
                    if text.is_empty() {
                        continue;
                    }
                    b.flush();
                    b.out.push(json!({"role": "user", "content": text}));
                }
                Role::Assistant => {
                    let text = joined(&message.content);
                    if text.is_empty() {
                        continue;
                    }
                    if b.calls.is_empty() {
                        b.held = Some(text);
                    } else {
                        b.texts.push(text);
                    }
                }
                Role::System => {}
            },
            Item::ToolCall(call) => {
                if let Some(text) = b.held.take() {
                    b.texts.push(text);
                }
                let index = b.calls.len();
                b.calls.push(json!({"index": index, "function": {"arguments": call.input.as_arguments(), "name": call.name},
                    "id": call.id.clone().unwrap_or_default(), "type": "function"}));
            }
            Item::ToolResult(result) => {
                b.flush_text();
                b.flush_calls();
                let content = result.content.text_parts().join("\n");
                b.out.push(json!({"content": content,
                    "tool_call_id": result.call_id.clone().unwrap_or_default(), "role": "tool"}));
            }
            Item::Reasoning(reasoning) => {
                if !reasoning.text.is_empty() {
                    b.reasoning
                        .get_or_insert_with(String::new)
                        .push_str(&reasoning.text);
                }
            }
        }
    }
    b.flush();
    b.out
}

impl Builder {
    /// Pending calls, then held text.
    fn flush(&mut self) {
        self.flush_calls();
        self.flush_text();
    }

    fn flush_text(&mut self) {
        if let Some(text) = self.held.take() {
            let message = self.with_reasoning(json!({"content": text, "role": "assistant"}));
            self.out.push(message);
        }
    }

    fn flush_calls(&mut self) {
        if self.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        let text = std::mem::take(&mut self.texts).join("\n");
        let message =
            self.with_reasoning(json!({"content": text, "role": "assistant", "tool_calls": calls}));
        self.out.push(message);
    }

    /// The reasoning waiting for an assistant message, where LiteLLM puts it.
    fn with_reasoning(&mut self, mut message: Value) -> Value {
        if let Some(reasoning) = self.reasoning.take() {
            message["reasoning_content"] = json!(reasoning);
            message["provider_specific_fields"] =
                json!({"refusal": null, "reasoning_content": reasoning});
        }
        message
    }
}

/// mini-swe-agent's answer rule.
struct Reader {
    no_tool_call: Arc<str>,
    /// Its `bash` tool.
    shell: String,
}

impl ActionReader for Reader {
    fn harness(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn read(&self, answer: &Answer<'_>, _attempts: Attempts) -> Verdict {
        if let [only] = answer.calls
            && only.name == self.shell
            && completes(only.arguments)
        {
            return Verdict::Final;
        }
        if !answer.calls.is_empty() {
            return Verdict::Calls;
        }
        if answer.text.trim().is_empty() {
            // No message at all: nothing for the rule to replace.
            return Verdict::Final;
        }
        Verdict::Retry(Retry {
            kind: RetryKind::Correction,
            keep_answer: false,
            turn: self.no_tool_call.to_string(),
            replaces_earlier: false,
        })
    }

    fn cannot_run(&self, _action: &HarnessCall) -> Retry {
        Retry {
            kind: RetryKind::Correction,
            keep_answer: false,
            turn: self.no_tool_call.to_string(),
            replaces_earlier: false,
        }
    }

    fn final_text(&self, text: &str) -> String {
        if text.trim().is_empty() {
            COMPLETE.to_owned()
        } else {
            text.to_owned()
        }
    }
}

/// Whether a call's arguments are the completion command alone.
pub fn completes(arguments: &str) -> bool {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|args| {
            args.get("command")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .is_some_and(|command| command.trim() == COMPLETE)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::conversation::action::{Answer, AnswerCall, Attempts, RetryKind, Verdict};
    use crate::harness::test_support::{body, prepare, reader};

    fn request() -> serde_json::Value {
        json!({"model": "m", "messages": [{"role": "user", "content": "Fix it"}], "tools": [
            {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
        ]})
    }

    fn verdict(text: &str, calls: &[AnswerCall<'_>]) -> Verdict {
        let prepared = prepare("mini-swe-agent", &request(), &[]);
        reader(&prepared).read(&Answer { text, calls }, Attempts::default())
    }

    /// The reference's `text_only_response_is_replaced_with_retry_error` and
    /// `tool_response_preserves_assistant_and_tool_call`.
    #[test]
    fn a_text_answer_is_replaced_by_the_correction_and_calls_go_through() {
        let Verdict::Retry(retry) = verdict("I would run ls.", &[]) else {
            panic!("a correction");
        };
        assert_eq!(retry.kind, RetryKind::Correction);
        assert!(!retry.keep_answer, "the correction replaces the answer");
        assert!(
            retry.turn.starts_with("Tool call error:\n\n<error>\n"),
            "{}",
            retry.turn
        );
        let ls = [AnswerCall {
            name: "bash",
            arguments: r#"{"command":"ls"}"#,
        }];
        assert_eq!(verdict("Listing.", &ls), Verdict::Calls);
        assert_eq!(verdict("", &[]), Verdict::Final);
    }

    #[test]
    fn the_completion_command_alone_ends_the_turn() {
        let done = [AnswerCall {
            name: "bash",
            arguments: r#"{"command":"  echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT "}"#,
        }];
        assert_eq!(verdict("", &done), Verdict::Final);
        let prepared = prepare("mini-swe-agent", &request(), &[]);
        assert_eq!(
            reader(&prepared).final_text(""),
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        );
        let with_more = [AnswerCall {
            name: "bash",
            arguments: r#"{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && ls"}"#,
        }];
        assert_eq!(verdict("", &with_more), Verdict::Calls);
    }

    #[test]
    fn on_darwin_the_task_carries_the_sed_note() {
        let prepared = prepare(
            "mini-swe-agent",
            &request(),
            &[("x-harness-platform", "darwin")],
        );
        let first = body(&prepared)["messages"][1]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            first.starts_with("Please solve this issue: Fix it\n"),
            "{first}"
        );
        assert!(
            first.contains("<system_information>\nDarwin\n</system_information>"),
            "{first}"
        );
        assert!(
            first.contains("### Edit files with sed:<important>\nThis machine runs macOS"),
            "{first}"
        );
        let linux = prepare(
            "mini-swe-agent",
            &request(),
            &[("x-harness-platform", "linux")],
        );
        let first = body(&linux)["messages"][1]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(first.contains("### Edit files with sed:```bash"), "{first}");
    }
}
