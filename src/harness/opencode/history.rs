//! History → `messages` (docs/wire.md §1 "History"): one left-to-right pass with pending calls,
//! awaited call ids and pending assistant text. `HistoryMode::Reference` is the reference converter
//! exactly (plain assistant text dropped); `Keep` emits assistant text in place, as real opencode
//! does.

use std::collections::HashMap;

use super::body::{OutCall, OutFunction, OutMessage};
use crate::clients::args::reserialize_arguments;
use crate::clients::contextual::is_contextual;
use crate::clients::profiles::Profile;
use crate::clients::quote::quote_prompt;
use crate::config::HistoryMode;
use crate::conversation::{Item, Message, Role, ToolCall, ToolResult};

const NO_TRUNCATE_MARKER: &str = "<open-interpreter-harness-no-truncate>\n";

pub struct HistoryOptions<'a> {
    pub mode: HistoryMode,
    /// JSON-quote user text (main flavour only).
    pub quote_user: bool,
    pub profile: &'a Profile,
}

struct Converter<'a> {
    options: &'a HistoryOptions<'a>,
    out: Vec<OutMessage>,
    pending_calls: Vec<OutCall>,
    awaiting: Vec<String>,
    pending_text: Option<String>,
    /// Client tool name of every call seen, by id, so its output can be translated.
    call_tools: HashMap<String, String>,
}

/// Converts the client's items (system messages and reasoning are ignored here).
pub fn convert(items: &[Item], options: &HistoryOptions<'_>) -> Vec<OutMessage> {
    let mut c = Converter {
        options,
        out: Vec::with_capacity(items.len()),
        pending_calls: Vec::new(),
        awaiting: Vec::new(),
        pending_text: None,
        call_tools: HashMap::new(),
    };
    for item in items {
        match item {
            Item::Message(message) => c.message(message),
            Item::ToolCall(call) => c.call(call),
            Item::ToolResult(result) => c.tool_output(result),
            Item::Reasoning(_) => {}
        }
    }
    c.flush_calls();
    if let Some(text) = c.pending_text.take().filter(|t| !t.is_empty()) {
        c.out.push(OutMessage::assistant(text));
    }
    c.out
}

impl Converter<'_> {
    fn keep(&self) -> bool {
        self.options.mode == HistoryMode::Keep
    }

    fn message(&mut self, message: &Message) {
        match message.role {
            Role::Assistant => self.assistant_text(message),
            Role::User => {
                if is_contextual(message.content.text_parts()) {
                    return;
                }
                let text = message.content.text();
                self.discard();
                let content = if self.options.quote_user {
                    quote_prompt(&text)
                } else {
                    text.into_owned()
                };
                self.out.push(OutMessage::user(content));
            }
            Role::Developer => {
                self.discard();
                let text = message.content.text();
                if !text.is_empty() {
                    self.out.push(OutMessage::user(text.into_owned()));
                }
            }
            Role::System => {}
        }
    }

    fn assistant_text(&mut self, message: &Message) {
        let text = message.content.text();
        if text.is_empty() {
            return;
        }
        if self.keep() {
            // Earlier text is emitted, not replaced; calls before it go first to keep order.
            self.flush_calls();
            if let Some(previous) = self.pending_text.take() {
                self.out.push(OutMessage::assistant(previous));
            }
        }
        self.pending_text = Some(text.into_owned());
    }

    fn call(&mut self, call: &ToolCall) {
        let client_name = call.name.as_str();
        let args = call.input.as_arguments();
        let (name, args) = self.options.profile.call_to_opencode(client_name, &args);
        let arguments = reserialize_arguments(&name, &args);
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{}", name.replace('.', "_")));
        self.call_tools.insert(id.clone(), client_name.to_owned());
        self.pending_calls.push(OutCall {
            kind: "function",
            id,
            function: OutFunction { name, arguments },
        });
    }

    fn tool_output(&mut self, result: &ToolResult) {
        self.flush_calls();
        let Some(id) = result.call_id.as_deref() else {
            return;
        };
        let Some(pos) = self.awaiting.iter().position(|a| a == id) else {
            return;
        };
        self.awaiting.remove(pos);
        let text = result.text();
        let text = text.strip_prefix(NO_TRUNCATE_MARKER).unwrap_or(&text);
        let client_tool = self.call_tools.get(id).map_or("", String::as_str);
        let content = self.options.profile.output_to_opencode(client_tool, text);
        self.out.push(OutMessage::ToolResult {
            role: "tool",
            content,
            tool_call_id: id.to_owned(),
        });
    }

    /// Before a user or developer message: unanswered calls are dropped; pending text is dropped
    /// (reference) or emitted (keep).
    fn discard(&mut self) {
        self.pending_calls.clear();
        self.awaiting.clear();
        let text = self.pending_text.take();
        if self.keep()
            && let Some(text) = text
        {
            self.out.push(OutMessage::assistant(text));
        }
    }

    fn flush_calls(&mut self) {
        if self.pending_calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.pending_calls);
        self.awaiting.extend(calls.iter().map(|c| c.id.clone()));
        let content = self.pending_text.take().unwrap_or_default();
        self.out.push(OutMessage::Calls {
            role: "assistant",
            content,
            tool_calls: calls,
        });
    }
}
