//! `pi` (docs/harnesses.md): pi's system prompt (its four tools, guidelines, `Current date:` and
//! `Current working directory:` last, no trailing newline), builder P (raw user text as a
//! one-part array, `reasoning_content` on every assistant message), pi's four tools with
//! `strict: false`, and its body: `store: false`, `thinking` enabled, `reasoning_effort: "high"`,
//! no token limit, no `tool_choice`.
//!
//! The date is the client's day (`family::context`), never a request's time: every turn of a day
//! extends the last byte for byte. Nothing of the client's system prompt is sent.

use bytes::Bytes;
use serde_json::json;

use super::family::context::Context;
use super::family::{Body, Common, ToolSet, builder_p, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("pi/system.md");
const TOOLS: Builtin = prompt_file!("pi/tools.json");

pub struct Pi {
    common: Common,
    /// `{{date}}` (`YYYY-MM-DD`) and `{{cwd}}` filled per request.
    system: Pattern,
    tools: ToolSet,
}

impl Pi {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        Ok(Self {
            system: setup.prompts.read(&SYSTEM)?.pattern(&["date", "cwd"])?,
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("pi"))?,
            common,
        })
    }

    fn body(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let conversation = request.conversation;
        let bridge = self
            .common
            .bridge(&conversation, request.headers, &self.tools)?;
        let items = translate(&conversation.items, &bridge);
        let context = Context::of(&items, request.headers, request.now, &self.common.context);
        let date = context.date.format("%Y-%m-%d").to_string();
        let system = self.system.fill(&[&date, &context.cwd]);
        let mut messages = vec![json!({"role": "system", "content": system})];
        messages.extend(builder_p::build(&items, self.common.keeps()));
        let tools = self
            .tools
            .offered(&conversation.tools, &bridge, self.common.config.tools);
        let mut body = json!({"model": conversation.model, "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}, "store": false});
        if !tools.is_empty() {
            tools.slot(&mut body);
        }
        body["thinking"] = json!({"type": "enabled"});
        body["reasoning_effort"] = json!("high");
        prepared(Body::new(&body, &tools), bridge, &conversation)
    }
}

impl Harness for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.common.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        self.common.prepare(request, |request| self.body(request))
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        _headers: &mut http::HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        self.common.title_request(ask)
    }
}
