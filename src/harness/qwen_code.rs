//! `qwen-code` (docs/harnesses.md): Qwen Code's system prompt, its synthetic setup turn (date, OS,
//! working directory, folder listing) and the assistant's one-line reply, then builder K-cli with
//! Qwen Code's normalisation (tool messages as text parts, reasoning without its trailing
//! newline, arguments re-serialised with its key orders), Qwen Code's own tools, and its body
//! (`max_tokens: 8000`).
//!
//! The reference appends the runtime's developer texts and its own system prompt to Qwen Code's;
//! the proxy appends, under `# Session Instructions`, only the project instructions the client
//! carries (AGENTS.md / CLAUDE.md contents), since a client's developer and system texts are its
//! own persona (docs/harnesses.md). The folder listing is the working directory's line alone: the
//! proxy cannot list the client's disk.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::family::body::{JsonText, kept};
use super::family::builder_k::{self, KIMI_BLANK};
use super::family::context::Context;
use super::family::{Body, Common, ToolSet, prepared, translate};
use super::{Harness, HarnessError, HarnessRequest, Prepared, SetupError, TitleAsk};
use crate::conversation::Conversation;
use crate::prompt_file;
use crate::prompts::Builtin;
use crate::template::Pattern;

const SYSTEM: Builtin = prompt_file!("qwen-code/system.md");
const SETUP: Builtin = prompt_file!("qwen-code/setup.md");
const SETUP_REPLY: Builtin = prompt_file!("qwen-code/setup_reply.md");
const TOOLS: Builtin = prompt_file!("qwen-code/tools.json");

pub struct QwenCode {
    common: Common,
    /// Qwen Code's system prompt, escaped once and kept (22 KB, sent as it is: `family::body`).
    system: Bytes,
    setup: Pattern,
    setup_reply: String,
    tools: ToolSet,
}

impl QwenCode {
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let common = Common::from_setup(setup);
        Ok(Self {
            system: kept(&setup.prompts.read(&SYSTEM)?.plain()?),
            setup: setup.prompts.read(&SETUP)?.pattern(&[
                "today",
                "operating_system",
                "cwd_display",
                "folder_listing",
            ])?,
            setup_reply: setup.prompts.read(&SETUP_REPLY)?.plain()?,
            tools: ToolSet::load(setup.prompts, &TOOLS, common.profiles.dialect("qwen-code"))?,
            common,
        })
    }

    /// The system text, JSON-escaped.
    fn system(&self, context: &Context) -> JsonText {
        let mut system = JsonText::default();
        system.push_kept(&self.system);
        if !context.instructions.is_empty() {
            system.push("\n\n# Session Instructions\n\n");
            system.push(context.instructions.join("\n\n").trim());
        }
        system
    }

    fn setup_turn(&self, context: &Context) -> String {
        let today = context.date.format("%A, %B %-d, %Y").to_string();
        let os = match context.platform.as_str() {
            "macos" => "darwin",
            other => other,
        };
        let listing = format!("{}/", context.cwd.trim_end_matches('/'));
        self.setup.fill(&[&today, os, &context.cwd, &listing])
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

/// Qwen Code's normalisation of builder K's messages.
fn normalise(message: &mut Value) {
    let Some(object) = message.as_object_mut() else {
        return;
    };
    match object.get("role").and_then(Value::as_str) {
        Some("tool") => {
            if let Some(Value::String(text)) = object.get("content") {
                let parts = json!([{"type": "text", "text": text}]);
                object.insert("content".into(), parts);
            }
        }
        Some("assistant") => {
            if let Some(Value::String(reasoning)) = object.get_mut("reasoning_content") {
                let trimmed = reasoning.trim_end_matches('\n').len();
                reasoning.truncate(trimmed);
            }
            if object.get("content") == Some(&json!([])) && object.contains_key("tool_calls") {
                object.insert("content".into(), json!(""));
            }
            if let Some(Value::Array(calls)) = object.get_mut("tool_calls") {
                for call in calls {
                    let name = call["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if let Some(Value::String(arguments)) = call.pointer_mut("/function/arguments")
                    {
                        *arguments = arguments_in_order(&name, arguments);
                    }
                }
            }
        }
        _ => {}
    }
}

/// Arguments re-serialised compactly; three of Qwen Code's tools keep only their own keys, in
/// their order; text that is not JSON as it is.
fn arguments_in_order(name: &str, arguments: &str) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_owned();
    };
    let keys: &[&str] = match name {
        "read_file" => &["file_path", "offset", "limit", "pages"],
        "edit" => &["file_path", "old_string", "new_string", "replace_all"],
        "run_shell_command" => &[
            "command",
            "description",
            "directory",
            "is_background",
            "timeout",
        ],
        _ => return Value::Object(args).to_string(),
    };
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = args.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    Value::Object(out).to_string()
}

impl Harness for QwenCode {
    fn name(&self) -> &'static str {
        "qwen-code"
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
        // The system message is written first by `Body::with_system`.
        let mut messages = vec![
            json!({"role": "user", "content": [{"type": "text", "text": self.setup_turn(&context)}]}),
            json!({"role": "assistant", "content": self.setup_reply}),
        ];
        let options = builder_k::Options {
            keep: self.common.keeps(),
            ..K_CLI
        };
        for mut message in builder_k::build(&items, options) {
            normalise(&mut message);
            messages.push(message);
        }
        let tools = self
            .tools
            .offered(&conversation.tools, &bridge, self.common.config.tools);
        let mut body = json!({"model": conversation.model, "messages": messages,
            "max_tokens": 8000, "stream": true, "stream_options": {"include_usage": true}});
        if !tools.is_empty() {
            tools.slot(&mut body);
        }
        let system = self.system(&context);
        prepared(Body::new(&body, &tools).with_system(&system), bridge, &conversation)
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
