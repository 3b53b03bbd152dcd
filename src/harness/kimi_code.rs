//! `kimi-code` (docs/harnesses.md): Kimi Code's system template (OS, shell, the session's time,
//! working directory, its listing, the built-in skills), builder K-code (raw user text,
//! compacted arguments, `:` → `_` in call ids, `reasoning_content` on every assistant message),
//! the auto-permission reminder as a user turn after every user turn, Kimi Code's 25 tools, and
//! its body (`max_completion_tokens: 32768`, `prompt_cache_key: "session_<thread>"`, `thinking`
//! with `keep: "all"`).
//!
//! The reference renders the prompt once per thread (its timestamp and listing frozen): here the
//! timestamp is the conversation's day (`family::context`), the listing empty (the proxy cannot
//! list the client's disk) and AGENTS.md empty (the reference never loads it), so every turn
//! renders the same prompt. The thread is the conversation's prompt-cache scope.

use bytes::Bytes;
use serde_json::{Value, json};

use super::family::body::{JsonText, KeptPattern};
use super::family::builder_k::{self, KIMI_BLANK};
use super::family::context::Context;
use super::family::{Body, Common, ToolSet, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;

const SYSTEM: Builtin = prompt_file!("kimi-code/system.md");
const REMINDER: Builtin = prompt_file!("kimi-code/reminder.md");
const SKILLS: Builtin = prompt_file!("kimi-code/skills.md");
const TOOLS: Builtin = prompt_file!("kimi-code/tools.json");

/// The template's placeholders, in the order `fill` takes them.
const HOLES: [&str; 9] = [
    "ROLE_ADDITIONAL",
    "KIMI_OS",
    "KIMI_SHELL",
    "KIMI_NOW",
    "KIMI_WORK_DIR",
    "KIMI_WORK_DIR_LS",
    "KIMI_ADDITIONAL_DIRS_INFO",
    "KIMI_AGENTS_MD",
    "KIMI_SKILLS",
];

/// The shell Kimi's templates name, always.
pub const KIMI_SHELL: &str = "bash (`/bin/bash`)";

pub struct KimiCode {
    common: Common,
    /// Its literal runs escaped once and kept (19 KB a request, sent as they are: `family::body`).
    system: KeptPattern,
    reminder: String,
    skills: String,
    tools: ToolSet,
}

impl KimiCode {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        Ok(Self {
            system: KeptPattern::new(&setup.prompts.read(&SYSTEM)?.pattern(&HOLES)?),
            reminder: setup.prompts.read(&REMINDER)?.plain()?,
            skills: setup.prompts.read(&SKILLS)?.plain()?,
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("kimi-code"))?,
            common,
        })
    }

    /// The system text, JSON-escaped.
    fn system(&self, context: &Context) -> JsonText {
        let mut out = JsonText::with_capacity(2 * 1024);
        self.system.fill_into(
            &mut out,
            &[
                "",
                context.kimi_os(),
                KIMI_SHELL,
                &context.day_start(),
                &context.cwd,
                "",
                "",
                "",
                &self.skills,
            ],
        );
        out
    }
}

const K_CODE: builder_k::Options = builder_k::Options {
    empty_reasoning: None,
    compact_arguments: true,
    merge_text: false,
    reasoning_always: true,
    blank_output: KIMI_BLANK,
    trim_user_newlines: false,
    underscore_ids: true,
    keep: false,
};

/// The reminder after every user turn (not after one that already is the reminder).
fn remind(messages: Vec<Value>, reminder: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() * 2);
    for message in messages {
        let is_user = message["role"] == "user";
        let is_reminder = message["content"] == reminder;
        out.push(message);
        if is_user && !is_reminder {
            out.push(json!({"role": "user", "content": reminder}));
        }
    }
    out
}

impl Harness for KimiCode {
    fn name(&self) -> &'static str {
        "kimi-code"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.common.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        self.common.prepare(request, |request| {
            let conversation = request.conversation;
            let bridge = self
                .common
                .bridge(&conversation, request.headers, &self.tools)?;
            let items = translate(&conversation.items, &bridge);
            let context = Context::of(&items, request.headers, request.now, &self.common.context);
            let options = builder_k::Options {
                keep: self.common.keeps(),
                ..K_CODE
            };
            // The system message is written first by `Body::with_system`.
            let messages = remind(builder_k::build(&items, options), &self.reminder);
            let tools = self
                .tools
                .offered(&conversation.tools, &bridge, self.common.config.tools);
            let thread = super::cache_key::for_request(
                self.common.config.prompt_cache_key,
                &conversation,
                request.headers,
            );
            let mut body = json!({"model": conversation.model, "messages": messages,
            "max_completion_tokens": 32_768});
            if let Some(thread) = thread {
                body["prompt_cache_key"] = json!(format!("session_{thread}"));
            }
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
            if !tools.is_empty() {
                tools.slot(&mut body);
            }
            body["thinking"] = json!({"type": "enabled", "keep": "all"});
            let system = self.system(&context);
            prepared(
                Body::new(&body, &tools).with_system(&system),
                bridge,
                &conversation,
            )
        })
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        _headers: &mut http::HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        self.common.title_request(ask)
    }
}
