//! `zcode` (ZCode 0.14.8; docs/harnesses.md): any client's request as ZCode sends it. On a
//! Messages upstream (`POST {base}/v1/messages`): three system blocks, each cached (its identity
//! line, its harness rules, its environment block), the messages as Anthropic blocks (Claude
//! Code's builder, `claude_code::messages`: tool results in call order, the date reminder first,
//! one cache breakpoint), its built-in skills message as a `system` message after the first user
//! turn, its todo-staleness and plan-mode reminders (`reminders`), its 14 tools in Anthropic's
//! form, `tool_choice: {type: auto}`, `max_tokens: 64000`, and its headers. On a Chat upstream
//! the three blocks as one system message, the messages in Chat's form (no reminders), its tools
//! as functions, the token limit.
//!
//! Its tools speak Claude Code's dialect (`profiles/claude-code.toml`: `Bash`, `Read`, `Edit`,
//! `Write`, `TodoWrite`, `WebFetch`). Pure: the date is the client's day; what the request cannot
//! say of the client's machine (git, shell) takes the documented empty form.

mod reminders;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::claude_code::{body::anthropic_tool, messages};
use super::family::context::Context;
use super::family::{Body, Common, ToolSet, builder_m, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::config::Wire;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const IDENTITY: Builtin = prompt_file!("zcode/identity.md");
const RULES: Builtin = prompt_file!("zcode/rules.md");
const ENVIRONMENT: Builtin = prompt_file!("zcode/environment.md");
const DATE_REMINDER: Builtin = prompt_file!("zcode/date-reminder.md");
const SKILLS: Builtin = prompt_file!("zcode/skills.md");
const TOOLS: Builtin = prompt_file!("zcode/tools.json");

/// ZCode's token limit.
const MAX_TOKENS: u64 = 64_000;

pub struct Zcode {
    common: Common,
    tools: ToolSet,
    identity: String,
    rules: String,
    /// `cwd`, `git`, `platform`, `shell`, `os_version`, `model`.
    environment: Pattern,
    /// `date`.
    reminder: Pattern,
    /// The built-in skills message, after the first user turn.
    skills: String,
    /// The todo-staleness and plan-mode reminders (Messages wire).
    reminders: reminders::Reminders,
    wire: Wire,
}

impl Zcode {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let prompts = setup.prompts;
        let holes = ["cwd", "git", "platform", "shell", "os_version", "model"];
        Ok(Self {
            tools: ToolSet::load(prompts, &TOOLS, common.profiles.dialect("claude-code"))?,
            identity: prompts.read(&IDENTITY)?.plain()?,
            rules: prompts.read(&RULES)?.plain()?,
            environment: prompts.read(&ENVIRONMENT)?.pattern(&holes)?,
            reminder: prompts.read(&DATE_REMINDER)?.pattern(&["date"])?,
            skills: prompts.read(&SKILLS)?.plain()?,
            reminders: reminders::Reminders::from_prompts(prompts)?,
            wire: setup.config.upstream.wire,
            common,
        })
    }

    /// The three system texts: identity, rules, environment.
    fn system(&self, model: &str, context: &Context) -> [String; 3] {
        // ZCode names its model `zai/<slug>` unless the slug already has a provider.
        let named = if model.contains('/') {
            model.to_owned()
        } else {
            format!("zai/{model}")
        };
        let environment = self.environment.fill(&[
            &context.cwd,
            "no",
            &context.platform,
            "unknown",
            &context.platform,
            &named,
        ]);
        [self.identity.clone(), self.rules.clone(), environment]
    }

    fn body(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let conversation = request.conversation;
        let bridge = self
            .common
            .bridge(&conversation, request.headers, &self.tools)?;
        let items = translate(&conversation.items, &bridge);
        let context = Context::of(&items, request.headers, request.now, &self.common.context);
        let tools = self
            .tools
            .offered(&conversation.tools, &bridge, self.common.config.tools)
            .into_values();
        let model = model_slug(&conversation.model);
        let system = self.system(model, &context);
        let body = match self.wire {
            Wire::Chat => {
                let mut out = vec![json!({"role": "system", "content": system.join("\n\n")})];
                out.extend(builder_m::build(&items));
                let mut body = json!({"model": model, "messages": out, "stream": true});
                if !tools.is_empty() {
                    body["tools"] = Value::Array(tools);
                }
                body["max_tokens"] = json!(MAX_TOKENS);
                body
            }
            Wire::Messages => {
                let date = context.date.format("%Y-%m-%d").to_string();
                let reminder = format!("{}\n\n", self.reminder.fill(&[&date]));
                let mut turns = messages::build(&items, &reminder, messages::Skills::Dropped);
                // The built-in skills message follows the first user turn, as ZCode sends it.
                let at = turns
                    .iter()
                    .position(|m| m["role"] == "user")
                    .map_or(0, |i| i + 1);
                turns.insert(at, json!({"role": "system", "content": self.skills}));
                self.reminders.add(&mut turns);
                let cached = |text: &str| json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}});
                let tools: Vec<Value> = tools.iter().map(anthropic_tool).collect();
                json!({"model": model, "messages": turns,
                    "system": system.iter().map(|t| cached(t)).collect::<Vec<_>>(),
                    "tools": tools, "tool_choice": {"type": "auto"},
                    "max_tokens": MAX_TOKENS, "stream": true})
            }
        };
        prepared(Body::plain(&body), bridge, &conversation)
    }
}

/// The model without ZCode's provider prefix (`zai/`, `z.ai/`).
fn model_slug(model: &str) -> &str {
    model
        .strip_prefix("zai/")
        .or_else(|| model.strip_prefix("z.ai/"))
        .unwrap_or(model)
}

impl Harness for Zcode {
    fn name(&self) -> &'static str {
        "zcode"
    }

    fn is_client_title_request(&self, conversation: &crate::conversation::Conversation) -> bool {
        self.common.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        if self.wire == Wire::Chat && self.common.is_title_request(&request.conversation) {
            return Prepared::unchanged(&request);
        }
        // ZCode's one child form is its Explore agent's, chosen by the role it was spawned
        // with, which no client's request names: a sub-agent is built as the main agent.
        self.common
            .prepare_sub_agents(request, |request, _| self.body(request))
    }

    /// ZCode has a Messages form: it speaks to either upstream.
    fn speaks(&self, _wire: Wire) -> bool {
        true
    }

    fn upstream_path(&self) -> &'static str {
        match self.wire {
            Wire::Chat => "/chat/completions",
            Wire::Messages => "/v1/messages",
        }
    }

    /// ZCode's headers, on the Messages wire only.
    fn add_upstream_headers(&self, headers: &mut HeaderMap, _conversation: &str) {
        if self.wire == Wire::Chat {
            return;
        }
        let fixed = [
            ("anthropic-version", "2023-06-01"),
            (
                "user-agent",
                "ZCode/0.14.8 ai-sdk/provider-utils/4.0.27 runtime/node.js/24",
            ),
            ("x-zcode-agent", "glm"),
            ("x-zcode-app-version", "0.14.8"),
            ("x-title", "Z Code@cli"),
            ("accept-language", "*"),
            ("http-referer", "http://127.0.0.1:60047"),
        ];
        for (name, value) in fixed {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }

    /// ZCode asks for no title; the proxy's plain one, when the operator titles it, on the wire
    /// the upstream speaks (with ZCode's headers on the Messages one).
    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        match self.wire {
            Wire::Chat => self.common.title_request(ask),
            Wire::Messages => {
                self.add_upstream_headers(headers, ask.conversation);
                self.common.title_request_messages(ask)
            }
        }
    }

    fn title_path(&self) -> Option<&'static str> {
        (self.wire == Wire::Messages).then_some("/v1/messages")
    }
}
