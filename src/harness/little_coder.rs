//! `little-coder` (docs/harnesses.md): its system prompt, then `Current date:` and `Current working
//! directory:`, then one of its two tool-guidance blocks; builder P (as pi); its 20 tools; its
//! body (`store: false`, `max_completion_tokens: 384000`, `thinking`, `reasoning_effort: "high"`,
//! `temperature: 0.3`).
//!
//! The guidance block is chosen once per conversation, from the conversation's first user
//! message (the reference reads every user message and may switch between turns, which would
//! break the prefix a cache keeps: docs/harnesses.md).

use bytes::Bytes;
use serde_json::json;

use super::family::context::Context;
use super::family::{Body, Common, ToolSet, builder_p, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::{Conversation, Item, Role};
use crate::prompt_file;
use crate::prompts::Builtin;

const SYSTEM: Builtin = prompt_file!("little-coder/system.md");
const READ_WRITE: Builtin = prompt_file!("little-coder/read_write_guidance.md");
const BROWSER: Builtin = prompt_file!("little-coder/browser_guidance.md");
const TOOLS: Builtin = prompt_file!("little-coder/tools.json");

/// Words in the first user message that pick the browser-research guidance (substrings, so
/// `curl` picks it too, as in the reference).
const BROWSER_WORDS: [&str; 5] = ["browser", "javascript", "xss", "webpage", "url"];

pub struct LittleCoder {
    common: Common,
    system: String,
    read_write: String,
    browser: String,
    tools: ToolSet,
}

impl LittleCoder {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        Ok(Self {
            system: setup.prompts.read(&SYSTEM)?.plain()?.trim_end().to_owned(),
            read_write: setup.prompts.read(&READ_WRITE)?.plain()?,
            browser: setup.prompts.read(&BROWSER)?.plain()?,
            tools: ToolSet::load(
                setup.prompts,
                &TOOLS,
                common.profiles.dialect("little-coder"),
            )?,
            common,
        })
    }

    fn system(&self, items: &[Item], context: &Context) -> String {
        let mut system = format!(
            "{}\n\nCurrent date: {}\nCurrent working directory: {}",
            self.system,
            context.date.format("%Y-%m-%d"),
            context.cwd
        );
        let first_user = items.iter().find_map(|item| match item {
            Item::Message(m) if m.role == Role::User => Some(m.content.text().to_lowercase()),
            _ => None,
        });
        if let Some(text) = first_user {
            let guidance = if BROWSER_WORDS.iter().any(|w| text.contains(w)) {
                &self.browser
            } else {
                &self.read_write
            };
            system.push_str("\n\n");
            system.push_str(guidance);
            // The reference's guidance texts end with a newline (the file's is trimmed).
            system.push('\n');
        }
        system
    }
}

impl Harness for LittleCoder {
    fn name(&self) -> &'static str {
        "little-coder"
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
            let mut messages =
                vec![json!({"role": "system", "content": self.system(&items, &context)})];
            messages.extend(builder_p::build(&items, self.common.keeps()));
            let tools = self
                .tools
                .offered(&conversation.tools, &bridge, self.common.config.tools);
            let mut body = json!({"model": conversation.model, "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}, "store": false,
            "max_completion_tokens": 384_000});
            if !tools.is_empty() {
                tools.slot(&mut body);
            }
            body["thinking"] = json!({"type": "enabled"});
            body["reasoning_effort"] = json!("high");
            body["temperature"] = json!(0.3);
            prepared(Body::new(&body, &tools), bridge, &conversation)
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
