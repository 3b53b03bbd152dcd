//! `kimi-cli` (docs/harnesses.md): Kimi CLI's system template (OS, shell, the session's time,
//! working directory, its listing, the project's AGENTS.md as the client carries it, the skills),
//! builder K-cli (user text with trailing newlines trimmed, failed outputs as errors, blank ones
//! said so, unanswered calls dropped), Kimi CLI's own tools, and its body (`max_tokens: 32000`,
//! `prompt_cache_key` the thread, the client's reasoning effort as `reasoning_effort` with
//! `thinking` enabled).
//!
//! Not emulated (documented): the developer-text section the reference appends (a client's
//! developer texts are its own persona, docs/harnesses.md), the compaction request (the proxy does not
//! know Kimi CLI's compaction prompt), and the thinking toggle of models that have one.

use bytes::Bytes;
use serde_json::{Value, json};

use super::family::body::{JsonText, KeptPattern};
use super::family::builder_k::{self, KIMI_BLANK};
use super::family::context::Context;
use super::family::{Body, Common, ToolSet, prepared, translate};
use super::kimi_code::KIMI_SHELL;
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("kimi-cli/system.md");
const SKILLS: Builtin = prompt_file!("kimi-cli/skills.md");
const TOOLS: Builtin = prompt_file!("kimi-cli/tools.json");

const HOLES: [&str; 9] = [
    "ROLE_ADDITIONAL",
    "KIMI_OS",
    "KIMI_SHELL",
    "KIMI_NOW",
    "KIMI_WORK_DIR",
    "KIMI_WORK_DIR_LS",
    "KIMI_AGENTS_MD",
    "KIMI_SKILLS",
    "KIMI_ADDITIONAL_DIRS_INFO",
];

pub struct KimiCli {
    common: Common,
    system: Pattern,
    /// `system` with its trailing newlines trimmed, its literal runs escaped once and kept (12 KB
    /// a request, sent as they are: `family::body`); `None` when the trim could reach a hole.
    kept_system: Option<KeptPattern>,
    skills: String,
    tools: ToolSet,
}

impl KimiCli {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let system = setup.prompts.read(&SYSTEM)?.pattern(&HOLES)?;
        Ok(Self {
            system: system.clone(),
            kept_system: system
                .trimmed_end_with(|text| text.trim_end_matches('\n'))
                .map(|trimmed| KeptPattern::new(&trimmed)),
            skills: setup.prompts.read(&SKILLS)?.plain()?,
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("kimi-cli"))?,
            common,
        })
    }

    /// The system text, JSON-escaped.
    fn system(&self, context: &Context) -> JsonText {
        // The session's time in Kimi CLI's form: microseconds and a numeric offset.
        let now = format!("{}T00:00:00.000000+00:00", context.date.format("%Y-%m-%d"));
        let agents_md = context.instructions.join("\n\n");
        let holes = [
            "",
            context.kimi_os(),
            KIMI_SHELL,
            &now,
            &context.cwd,
            "",
            &agents_md,
            &self.skills,
            "",
        ];
        let mut out = JsonText::with_capacity(2 * 1024);
        match &self.kept_system {
            Some(kept) => kept.fill_into(&mut out, &holes),
            None => out.push(self.system.fill(&holes).trim_end_matches('\n')),
        }
        out
    }
}

const K_CLI: builder_k::Options = builder_k::Options {
    empty_reasoning: None,
    compact_arguments: false,
    merge_text: false,
    reasoning_always: false,
    blank_output: KIMI_BLANK,
    trim_user_newlines: true,
    underscore_ids: false,
    keep: false,
};

/// The client's reasoning effort as Kimi CLI sends it: `none` nothing, `minimal`/`low`
/// low, `medium` medium, `high` and above high, another value as it is; each with `thinking`.
fn effort(body: &mut Value, effort: Option<&str>) {
    let level = match effort {
        None | Some("none") => return,
        Some("minimal" | "low") => "low",
        Some("medium") => "medium",
        Some("high" | "xhigh" | "max" | "ultra") => "high",
        Some(other) => other,
    };
    body["reasoning_effort"] = json!(level);
    body["thinking"] = json!({"type": "enabled"});
}

impl Harness for KimiCli {
    fn name(&self) -> &'static str {
        "kimi-cli"
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
                ..K_CLI
            };
            // The system message is written first by `Body::with_system`.
            let messages = builder_k::build(&items, options);
            let tools = self
                .tools
                .offered(&conversation.tools, &bridge, self.common.config.tools);
            let thread = super::cache_key::for_request(
                self.common.config.prompt_cache_key,
                &conversation,
                request.headers,
            );
            let mut body = json!({"model": conversation.model, "messages": messages,
            "max_tokens": 32_000});
            if let Some(thread) = thread {
                body["prompt_cache_key"] = json!(thread);
            }
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
            if !tools.is_empty() {
                tools.slot(&mut body);
            }
            effort(&mut body, conversation.options.reasoning_effort.as_deref());
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
