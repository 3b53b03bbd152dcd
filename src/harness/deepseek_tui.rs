//! `deepseek-tui` (docs/harnesses.md, CodeWhale 0.8.44): the layered system prompt (base with the
//! model, personality, mode, approvals, the project's instructions as the client carries them,
//! the environment block, context management, compaction, authority recap; joined by a blank
//! line), builder K-ds (assistant text merged into the calls that follow, `(reasoning omitted)`
//! where a tool-call turn has no reasoning), `<turn_meta>` before each user turn, the 84 tools,
//! and its body (`max_tokens: 64000`, `tool_choice: "auto"`).
//!
//! Choices (docs/harnesses.md): the reference puts `<turn_meta>` on the newest user turn
//! only, which rewrites the previous turn's message on every request; here every user turn
//! carries it (with the conversation's day), so turn N+1's body extends turn N's byte for byte,
//! and `history = "reference"` gives the newest-only form. The project context pack, the working
//! set's key files and active paths, the generated instructions file, the compaction request and
//! the plan-update rewrite need the client's disk or the runtime's state and are not emulated;
//! the shell is the reference's default (`/bin/zsh`), the proxy cannot see the client's.

use bytes::Bytes;
use serde_json::{Value, json};

use super::family::body::{JsonText, KeptPattern, kept};
use super::family::builder_k;
use super::family::context::Context;
use super::family::{Body, Common, ToolSet, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const BASE: Builtin = prompt_file!("deepseek-tui/base.md");
const PERSONALITY: Builtin = prompt_file!("deepseek-tui/personality.md");
const MODE: Builtin = prompt_file!("deepseek-tui/mode.md");
const APPROVALS: Builtin = prompt_file!("deepseek-tui/approvals.md");
const ENVIRONMENT: Builtin = prompt_file!("deepseek-tui/environment.md");
const CONTEXT_MANAGEMENT: Builtin = prompt_file!("deepseek-tui/context_management.md");
const COMPACT: Builtin = prompt_file!("deepseek-tui/compact.md");
const AUTHORITY: Builtin = prompt_file!("deepseek-tui/authority.md");
const TURN_META_HINT: Builtin = prompt_file!("deepseek-tui/turn_meta_hint.md");
const TOOLS: Builtin = prompt_file!("deepseek-tui/tools.json");

/// The reference's shell when `$SHELL` is unset.
const SHELL: &str = "/bin/zsh";
/// What a tool-call turn with no reasoning carries.
const OMITTED: &str = "(reasoning omitted)";

/// The system text's sections are joined by a blank line.
const GAP: &str = "\\n\\n";

/// The system text's fixed parts are kept JSON-escaped: they are most of a 30 KB text sent on
/// every request, and escaping them once is most of what writing the body costs (`family::body`).
pub struct DeepseekTui {
    common: Common,
    /// The base prompt, end-trimmed, with `{{model_id}}` a hole; its literal runs escaped and kept
    /// when the trim cannot reach the model's name (`escaped_base`), else escaped per request.
    base: Pattern,
    escaped_base: Option<KeptPattern>,
    /// Personality, mode and approvals, each end-trimmed, joined by a blank line; escaped.
    stance: Bytes,
    environment: Pattern,
    /// Context management, compaction and the authority recap, likewise.
    closing: Bytes,
    hint: String,
    tools: ToolSet,
}

impl DeepseekTui {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        let plain = |file: &Builtin| -> Result<String, SetupError> {
            Ok(setup.prompts.read(file)?.plain()?.trim_end().to_owned())
        };
        let base = setup.prompts.read(&BASE)?.pattern(&["model_id"])?;
        Ok(Self {
            escaped_base: base.trimmed_end().map(|p| KeptPattern::new(&p)),
            base,
            stance: kept(&[plain(&PERSONALITY)?, plain(&MODE)?, plain(&APPROVALS)?].join("\n\n")),
            environment: setup
                .prompts
                .read(&ENVIRONMENT)?
                .pattern(&["platform", "shell", "pwd"])?,
            closing: kept(
                &[
                    plain(&CONTEXT_MANAGEMENT)?,
                    plain(&COMPACT)?,
                    plain(&AUTHORITY)?,
                ]
                .join("\n\n"),
            ),
            hint: plain(&TURN_META_HINT)?,
            tools: ToolSet::load(
                setup.prompts,
                &TOOLS,
                common.profiles.dialect("deepseek-tui"),
            )?,
            common,
        })
    }

    /// Whether the client named its working directory (sections 5–6 and the working set need
    /// one).
    fn has_cwd(context: &Context) -> bool {
        context.cwd != "."
    }

    /// The system text, JSON-escaped.
    fn system(&self, model: &str, context: &Context) -> JsonText {
        // What is copied: the base's first lines, the model's name, the project's instructions
        // and the environment; the rest is kept (`push_kept`).
        let mut out = JsonText::with_capacity(4 * 1024);
        match &self.escaped_base {
            Some(base) => base.fill_into(&mut out, &[model]),
            None => out.push(self.base.fill(&[model]).trim_end()),
        }
        out.push_escaped(GAP);
        out.push_kept(&self.stance);
        if Self::has_cwd(context) {
            for block in &context.instructions {
                let (source, text) = block
                    .strip_prefix("Instructions from: ")
                    .and_then(|rest| rest.split_once('\n'))
                    .unwrap_or(("AGENTS.md", block));
                out.push_escaped(GAP);
                out.push(&format!(
                    "<project_instructions source=\"{source}\">\n{}\n</project_instructions>",
                    text.trim_end()
                ));
            }
        }
        let platform = match context.platform.as_str() {
            "darwin" | "macos" => "macos",
            "win32" | "windows" => "windows",
            other => other,
        };
        out.push_escaped(GAP);
        out.push(
            self.environment
                .fill(&[platform, SHELL, &context.cwd])
                .trim_end(),
        );
        out.push_escaped(GAP);
        out.push_kept(&self.closing);
        out
    }

    fn turn_meta(&self, context: &Context) -> String {
        let mut lines = vec![
            "<turn_meta>".to_owned(),
            format!("Current local date: {}", context.date.format("%Y-%m-%d")),
        ];
        if Self::has_cwd(context) {
            lines.push("## Repo Working Set".to_owned());
            lines.push(format!("Workspace: {}", context.cwd));
            lines.push(self.hint.clone());
        }
        lines.push("</turn_meta>".to_owned());
        lines.join("\n")
    }
}

const K_DS: builder_k::Options = builder_k::Options {
    empty_reasoning: Some(OMITTED),
    compact_arguments: true,
    merge_text: true,
    reasoning_always: false,
    blank_output: "",
    trim_user_newlines: true,
    underscore_ids: false,
    keep: false,
};

/// `<turn_meta>` before the content of every string-content user turn (or only the newest,
/// the reference's form), once.
fn add_turn_meta(messages: &mut [Value], meta: &str, newest_only: bool) {
    let users = messages
        .iter_mut()
        .rev()
        .filter(|m| m["role"] == "user" && m["content"].is_string());
    for (n, message) in users.enumerate() {
        if newest_only && n > 0 {
            break;
        }
        let content = message["content"].as_str().unwrap_or_default();
        if !content.starts_with("<turn_meta>") {
            message["content"] = json!(format!("{meta}\n{content}"));
        }
    }
}

impl Harness for DeepseekTui {
    fn name(&self) -> &'static str {
        "deepseek-tui"
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
                ..K_DS
            };
            let mut history = builder_k::build(&items, options);
            builder_k::fill_reasoning(&mut history, OMITTED);
            add_turn_meta(
                &mut history,
                &self.turn_meta(&context),
                !self.common.keeps(),
            );
            let system = self.system(&conversation.model, &context);
            let messages = history;
            let tools = self
                .tools
                .offered(&conversation.tools, &bridge, self.common.config.tools);
            let mut body = json!({"model": conversation.model, "messages": messages,
            "max_tokens": 64_000, "stream": true, "stream_options": {"include_usage": true}});
            if !tools.is_empty() {
                tools.slot(&mut body);
                body["tool_choice"] = json!("auto");
            }
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
