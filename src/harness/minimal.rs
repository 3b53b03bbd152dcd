//! `minimal` (docs/harnesses.md): two fixed lines as the system prompt, builder M (developer
//! messages as user messages, images kept with their `detail`), and the client's own tools as
//! they came (no tool set of its own: every call goes back under the client's name, checked
//! against its schema). The body is the plain streamed one; the reference's `thinking` toggle for
//! models that have one is not sent (the proxy cannot tell such models; docs/harnesses.md, "Not emulated").

use bytes::Bytes;
use serde_json::json;

use super::family::{Body, Common, ToolSet, builder_m, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;

const SYSTEM: Builtin = prompt_file!("minimal/system.md");

pub struct Minimal {
    common: Common,
    system: String,
    tools: ToolSet,
}

impl Minimal {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        Ok(Self {
            common: Common::from_setup(setup),
            system: setup.prompts.read(&SYSTEM)?.plain()?,
            tools: ToolSet::none(),
        })
    }
}

impl Harness for Minimal {
    fn name(&self) -> &'static str {
        "minimal"
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
            let mut messages = vec![json!({"role": "system", "content": self.system})];
            messages.extend(builder_m::build(&items));
            let tools = self
                .tools
                .offered(&conversation.tools, &bridge, self.common.config.tools);
            let mut body = json!({"model": conversation.model, "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}});
            if !tools.is_empty() {
                tools.slot(&mut body);
            }
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
