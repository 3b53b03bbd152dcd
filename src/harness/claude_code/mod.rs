//! `claude-code` and `claude-code-bare` (docs/harnesses.md): any client's
//! request as Claude Code sends it. On a Messages upstream (`upstream.wire = "messages"`) the
//! reference's body: three system blocks (the billing line, the SDK line, the prompt), the
//! messages as Anthropic blocks with the date reminder and one cache breakpoint (`messages`),
//! the tools in Anthropic's form in Claude Code's order, thinking and effort by model (`model`),
//! `context_management`, `metadata.user_id`, and Claude Code's headers and `?beta=true`. On a
//! Chat upstream the same prompt as one system message, the same tools as functions, the token
//! limit, and nothing that only Anthropic reads.
//!
//! The bare profile sends `CWD:` / `Date:` as its prompt and offers `Bash`, `Edit` and `Read`.
//! A request the client's markers call a sub-agent's gets the child form on either profile
//! (`child`).
//! The tools are Claude Code's own dialect (`profiles/claude-code.toml`): the bridge delivers
//! the model's calls as the client's tools. Pure: the date is the client's day.

pub(crate) mod body;
mod child;
pub(crate) mod messages;
pub mod model;
mod title;
pub(crate) mod todo;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use super::family::context::Context;
use super::family::{Body, Common, ToolSet, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::config::Wire;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("claude-code/system.md");
const GUIDANCE: Builtin = prompt_file!("claude-code/guidance.md");
const ENVIRONMENT: Builtin = prompt_file!("claude-code/environment.md");
const SDK: Builtin = prompt_file!("claude-code/sdk.md");
const DATE_REMINDER: Builtin = prompt_file!("claude-code/date-reminder.md");
const TOOLS: Builtin = prompt_file!("claude-code/tools.json");
const TODO_LIST: Builtin = prompt_file!("claude-code/todo-reminder.md");
const TODO_UNUSED: Builtin = prompt_file!("claude-code/todo-unused.md");
const TITLE: Builtin = prompt_file!("claude-code/title.md");
const CHILD: Builtin = prompt_file!("claude-code/child.md");
const BARE_SYSTEM: Builtin = prompt_file!("claude-code-bare/system.md");
const BARE_TOOLS: Builtin = prompt_file!("claude-code-bare/tools.json");

/// The placeholders of the prompts that describe the client's machine (the main form's
/// environment section, the child's `<env>` block), in the order filled.
const MACHINE: [&str; 7] = [
    "cwd",
    "git",
    "platform",
    "shell",
    "os_version",
    "model_name",
    "model_id",
];

/// Which of Claude Code's two forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The whole agent: its prompt and 27 tools.
    Full,
    /// `claude-code-bare`: `CWD:` / `Date:`, three tools, effort always high.
    Bare,
}

/// The prompt's texts: the full profile's three parts (joined by a blank line), or bare's line
/// pair.
enum Prompt {
    Full {
        /// `shell_tool`: `Bash`, else `PowerShell`.
        system: Pattern,
        guidance: String,
        /// What the client's machine is, as far as its request says (the proxy never looks).
        environment: Pattern,
    },
    /// `cwd`, `date`.
    Bare(Pattern),
}

pub struct ClaudeCode {
    profile: Profile,
    common: Common,
    tools: ToolSet,
    /// The prompt (third system block).
    prompt: Prompt,
    /// A sub-agent's prompt, either profile's: the `<env>` facts and the model, as `environment`'s.
    child: Pattern,
    /// The SDK line (second system block).
    sdk: String,
    /// `date` filled per request.
    reminder: Pattern,
    /// Claude Code's title prompt (third system block of its title request).
    title: String,
    /// The todo reminders' texts: the list's opening, the unused-tools reminder.
    todo: (String, String),
    /// The upstream's wire, which decides the body's form.
    wire: Wire,
}

impl ClaudeCode {
    pub fn from_setup(setup: &super::Setup<'_>, profile: Profile) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let prompts = setup.prompts;
        let (prompt, tools) = match profile {
            Profile::Full => {
                let prompt = Prompt::Full {
                    system: prompts.read(&SYSTEM)?.pattern(&["shell_tool"])?,
                    guidance: prompts.read(&GUIDANCE)?.plain()?,
                    environment: prompts.read(&ENVIRONMENT)?.pattern(&MACHINE)?,
                };
                (prompt, &TOOLS)
            }
            Profile::Bare => {
                let pattern = prompts.read(&BARE_SYSTEM)?.pattern(&["cwd", "date"])?;
                (Prompt::Bare(pattern), &BARE_TOOLS)
            }
        };
        Ok(Self {
            profile,
            tools: ToolSet::load(prompts, tools, common.profiles.dialect("claude-code"))?,
            prompt,
            child: prompts.read(&CHILD)?.pattern(&MACHINE)?,
            sdk: prompts.read(&SDK)?.plain()?,
            reminder: prompts.read(&DATE_REMINDER)?.pattern(&["date"])?,
            title: prompts.read(&TITLE)?.plain()?,
            todo: (
                prompts.read(&TODO_LIST)?.plain()?,
                prompts.read(&TODO_UNUSED)?.plain()?,
            ),
            wire: setup.config.upstream.wire,
            common,
        })
    }

    /// The prompt for this request's model and the client's machine (a sub-agent's when
    /// `child`). What the request cannot say (the shell, whether the directory is a git
    /// repository) takes the documented empty form: the proxy never reads the client's disk.
    fn prompt(&self, model: &str, context: &Context, shell_tool: &str, child: bool) -> String {
        let (name, id) = (model::display_name(model), model::canonical(model));
        if child {
            // The OS version is the platform's name: a request names no kernel.
            let platform = context.platform.as_str();
            let facts = [
                &context.cwd,
                child::GIT,
                platform,
                "unknown",
                platform,
                &name,
                id,
            ];
            return self.child.fill(&facts);
        }
        match &self.prompt {
            Prompt::Bare(pattern) => {
                let date = context.date.format("%Y-%m-%d").to_string();
                pattern.fill(&[&context.cwd, &date])
            }
            Prompt::Full {
                system,
                guidance,
                environment,
            } => {
                let environment = environment.fill(&[
                    &context.cwd,
                    "false",
                    &context.platform,
                    "unknown",
                    &context.platform,
                    &name,
                    id,
                ]);
                format!(
                    "{}\n\n{guidance}\n\n{environment}",
                    system.fill(&[shell_tool])
                )
            }
        }
    }

    fn body(&self, request: HarnessRequest<'_>, child: bool) -> Result<Prepared, HarnessError> {
        let conversation = request.conversation;
        let bridge = self
            .common
            .bridge(&conversation, request.headers, &self.tools)?;
        let items = translate(&conversation.items, &bridge);
        let context = Context::of(&items, request.headers, request.now, &self.common.context);
        let tools: Vec<serde_json::Value> = self
            .tools
            .offered(&conversation.tools, &bridge, self.common.config.tools)
            .into_values()
            .into_iter()
            .filter(|tool| !child || child::offers(tool))
            .collect();
        let shell_tool = if body::offers(&tools, "Bash") {
            "Bash"
        } else {
            "PowerShell"
        };
        let prompt = self.prompt(&conversation.model, &context, shell_tool, child);
        let parts = body::Parts {
            conversation: &conversation,
            items: &items,
            prompt,
            tools,
        };
        let upstream = match self.wire {
            Wire::Chat => body::chat(parts),
            Wire::Messages => {
                let date = context.date.format("%Y-%m-%d").to_string();
                let setting = body::Messages {
                    bare: self.profile == Profile::Bare,
                    child,
                    sdk: &self.sdk,
                    reminder: format!("{}\n\n", self.reminder.fill(&[&date])),
                    todo: (self.profile == Profile::Full && !child).then(|| todo::Texts {
                        list: &self.todo.0,
                        unused: &self.todo.1,
                    }),
                    scope: request
                        .headers
                        .get(&super::cache_key::SCOPE_HEADER)
                        .and_then(|v| v.to_str().ok()),
                    order: self.tools.names().collect(),
                };
                body::messages(&parts, &setting)
            }
        };
        prepared(Body::plain(&upstream), bridge, &conversation)
    }
}

impl Harness for ClaudeCode {
    fn name(&self) -> &'static str {
        match self.profile {
            Profile::Full => "claude-code",
            Profile::Bare => "claude-code-bare",
        }
    }

    fn is_client_title_request(&self, conversation: &crate::conversation::Conversation) -> bool {
        self.common.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        if self.wire == Wire::Chat && self.common.is_title_request(&request.conversation) {
            return Prepared::unchanged(&request);
        }
        self.common
            .prepare_sub_agents(request, |request, child| self.body(request, child))
    }

    /// Claude Code has a Messages form: it speaks to either upstream.
    fn speaks(&self, _wire: Wire) -> bool {
        true
    }

    fn upstream_path(&self) -> &'static str {
        match self.wire {
            Wire::Chat => "/chat/completions",
            Wire::Messages => "/v1/messages?beta=true",
        }
    }

    /// Claude Code checks a Messages server once before its first request; the reference sends
    /// nothing of the kind on Chat.
    fn preflight(&self) -> bool {
        self.wire == Wire::Messages
    }

    /// Claude Code's headers, on the Messages wire only (on Chat the reference sends none).
    fn add_upstream_headers(&self, headers: &mut HeaderMap, conversation: &str) {
        if self.wire == Wire::Chat {
            return;
        }
        body::add_headers(headers, self.profile == Profile::Bare);
        if let Ok(value) = HeaderValue::from_str(conversation) {
            headers.insert("x-claude-code-session-id", value);
        }
    }

    /// On a Messages upstream Claude Code's own title request, with its headers; on a
    /// Chat upstream the proxy's plain one (the reference sends none there).
    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        if self.wire == Wire::Chat {
            return self.common.title_request(ask);
        }
        self.add_upstream_headers(headers, ask.conversation);
        title::add_beta(headers, self.profile == Profile::Bare);
        let words = ask.words.text();
        title::body(ask.model, words, &self.sdk, &self.title, ask.conversation).map(Bytes::from)
    }

    fn title_path(&self) -> Option<&'static str> {
        (self.wire == Wire::Messages).then_some("/v1/messages?beta=true")
    }
}
