//! History → `messages` (docs/wire.md §1 "History"): one left-to-right pass with pending calls,
//! awaited call ids and pending assistant text. `HistoryMode::Reference` is the reference converter
//! exactly (plain assistant text dropped); `Keep` emits assistant text in place, as real opencode
//! does. With `ReasoningMode::Return` the reasoning of a turn goes with the assistant message it
//! precedes as `reasoning_content` (the text's message, else the calls' message); reasoning of a
//! turn dropped (unanswered calls, reference-mode text) goes with it. Images stay: a user message
//! with images is typed parts (its text first, then its images); the images of tool results go in
//! one user message right after the turn's results (`TOOL_IMAGES_TEXT` then the images), since a
//! Chat Completions `tool` message holds text only.

use std::collections::HashMap;

use super::body::{OutCall, OutFunction, OutImage, OutMessage, OutPart};
use crate::clients::args::reserialize_arguments;
use crate::clients::bridge::Bridge;
use crate::clients::contextual::{image_note as image_note_of, is_setup_turn, words_of};
use crate::clients::quote::quote_prompt;
use crate::config::{HistoryMode, ReasoningMode};
use crate::conversation::{Content, Item, Message, Part, Role, ToolCall, ToolResult};

const NO_TRUNCATE_MARKER: &str = "<open-interpreter-harness-no-truncate>\n";
/// The text before the images of tool results, in their user message.
pub const TOOL_IMAGES_TEXT: &str = "Attached image(s) from tool result:";

pub struct HistoryOptions<'a> {
    pub mode: HistoryMode,
    /// JSON-quote user text (main flavour only).
    pub quote_user: bool,
    /// The request's tool bridge: the client's calls and results in opencode's tools.
    pub bridge: &'a Bridge,
    pub reasoning: ReasoningMode,
}

struct Converter<'a> {
    options: &'a HistoryOptions<'a>,
    out: Vec<OutMessage>,
    pending_calls: Vec<OutCall>,
    awaiting: Vec<String>,
    pending_text: Option<String>,
    /// Reasoning not yet given to an assistant message; the reasoning of the pending text; the
    /// reasoning of the pending calls.
    reasoning: Option<String>,
    text_reasoning: Option<String>,
    calls_reasoning: Option<String>,
    /// Images of the tool results given so far, for the user message after them.
    result_images: Vec<OutPart>,
    /// Client tool name of every call seen, by id, so its output can be translated.
    call_tools: HashMap<String, String>,
    /// The opencode call ids a client call became, by the client's id.
    expanded: HashMap<String, Vec<String>>,
    /// The last message was an agent's setup turn (context only), whose own reply follows it.
    after_setup: bool,
    /// The last message was an agent's note naming the file of an image (`image_note`): the
    /// text of the image's message when that message has no words of its own.
    image_note: Option<String>,
}

/// Converts the client's items (system messages and reasoning are ignored here).
pub fn convert(items: &[Item], options: &HistoryOptions<'_>) -> Vec<OutMessage> {
    let mut c = Converter {
        options,
        out: Vec::with_capacity(items.len()),
        pending_calls: Vec::new(),
        awaiting: Vec::new(),
        pending_text: None,
        reasoning: None,
        text_reasoning: None,
        calls_reasoning: None,
        result_images: Vec::new(),
        call_tools: HashMap::new(),
        expanded: HashMap::new(),
        after_setup: false,
        image_note: None,
    };
    for item in items {
        if !matches!(item, Item::ToolResult(_)) {
            c.flush_result_images();
        }
        match item {
            Item::Message(message) => c.message(message),
            Item::ToolCall(call) => c.call(call),
            Item::ToolResult(result) => c.tool_output(result),
            Item::Reasoning(reasoning) => {
                if options.reasoning == ReasoningMode::Return && !reasoning.text.is_empty() {
                    append(&mut c.reasoning, &reasoning.text);
                }
            }
        }
    }
    c.flush_result_images();
    c.flush_calls();
    c.push_pending_text();
    c.out
}

impl Converter<'_> {
    fn keep(&self) -> bool {
        self.options.mode == HistoryMode::Keep
    }

    fn message(&mut self, message: &Message) {
        let after_setup = std::mem::take(&mut self.after_setup);
        let image_note = self.image_note.take();
        match message.role {
            // The agent's reply to its own setup turn ("Got it. Thanks for the context!", Qwen
            // Code's) is context as the turn is: it answers nothing the user said.
            Role::Assistant if after_setup => {}
            Role::Assistant => self.assistant_text(message),
            Role::User => {
                // Only the parts that are context go; the user's words always reach the model.
                let Some(text) = words_of(&message.content) else {
                    let context = message.content.text();
                    self.after_setup = is_setup_turn(&context);
                    self.image_note = image_note_of(&context).map(str::to_owned);
                    return;
                };
                self.discard();
                let wordless = text.is_empty();
                let content = if self.options.quote_user {
                    quote_prompt(&text)
                } else {
                    text
                };
                let images = images(&message.content);
                // An image with no words of its own says which file it is by the note before it.
                let content = match image_note {
                    Some(note) if wordless && !images.is_empty() => note,
                    _ => content,
                };
                if images.is_empty() {
                    self.out.push(OutMessage::user(content));
                } else {
                    // The text part first; an image-only message has one only when quoted (`""`).
                    let text = (!content.is_empty()).then_some(OutPart::Text { text: content });
                    self.out.push(OutMessage::Parts {
                        role: "user",
                        content: text.into_iter().chain(images).collect(),
                    });
                }
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
            self.push_pending_text();
        }
        self.pending_text = Some(text.into_owned());
        self.text_reasoning = self.reasoning.take();
    }

    /// The pending assistant text as its own message, with its reasoning.
    fn push_pending_text(&mut self) {
        let reasoning = self.text_reasoning.take();
        if let Some(text) = self.pending_text.take().filter(|t| !t.is_empty()) {
            self.out.push(OutMessage::assistant(text, reasoning));
        }
    }

    /// A client call as opencode's: one call, or several for a client tool doing several things
    /// at once (pi's `edits[]`), their ids the client's, then `<id>_2`, `<id>_3`….
    fn call(&mut self, call: &ToolCall) {
        let client_name = call.name.as_str();
        let args = call.input.as_arguments();
        let calls = self.options.bridge.history_calls(client_name, &args);
        if let Some(reasoning) = self.reasoning.take() {
            append(&mut self.calls_reasoning, &reasoning);
        }
        let mut ids = Vec::with_capacity(calls.len());
        for (n, (name, args)) in calls.into_iter().enumerate() {
            let arguments = reserialize_arguments(&name, &args);
            let base = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}", name.replace('.', "_")));
            let id = if n == 0 {
                base
            } else {
                format!("{base}_{}", n + 1)
            };
            ids.push(id.clone());
            self.pending_calls.push(OutCall {
                kind: "function",
                id,
                function: OutFunction { name, arguments },
            });
        }
        if let Some(first) = ids.first().cloned() {
            self.call_tools
                .insert(first.clone(), client_name.to_owned());
            self.expanded.insert(first, ids);
        }
    }

    fn tool_output(&mut self, result: &ToolResult) {
        self.flush_calls();
        let Some(id) = result.call_id.as_deref() else {
            return;
        };
        let ids = self
            .expanded
            .get(id)
            .cloned()
            .unwrap_or_else(|| vec![id.to_owned()]);
        let text = result.text();
        let text = text.strip_prefix(NO_TRUNCATE_MARKER).unwrap_or(&text);
        let client_tool = self.call_tools.get(id).map_or("", String::as_str);
        let content = self
            .options
            .bridge
            .history_output(client_tool, Some(id), text);
        let mut answered = false;
        for id in ids {
            let Some(pos) = self.awaiting.iter().position(|a| *a == id) else {
                continue;
            };
            self.awaiting.remove(pos);
            answered = true;
            // Each of the calls one client call became gets the client's one result.
            self.out.push(OutMessage::ToolResult {
                role: "tool",
                content: content.clone(),
                tool_call_id: id,
            });
        }
        if answered {
            self.result_images.extend(images(&result.content));
        }
    }

    /// The images of the results just given, as one user message after them.
    fn flush_result_images(&mut self) {
        if self.result_images.is_empty() {
            return;
        }
        let mut content = vec![OutPart::Text {
            text: TOOL_IMAGES_TEXT.to_owned(),
        }];
        content.append(&mut self.result_images);
        self.out.push(OutMessage::Parts {
            role: "user",
            content,
        });
    }

    /// Before a user or developer message: unanswered calls are dropped; pending text is dropped
    /// (reference) or emitted (keep).
    fn discard(&mut self) {
        self.pending_calls.clear();
        self.calls_reasoning = None;
        self.reasoning = None;
        self.awaiting.clear();
        if self.keep() {
            self.push_pending_text();
        } else {
            self.pending_text = None;
            self.text_reasoning = None;
        }
    }

    fn flush_calls(&mut self) {
        if self.pending_calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.pending_calls);
        self.awaiting.extend(calls.iter().map(|c| c.id.clone()));
        let content = self.pending_text.take().unwrap_or_default();
        let mut reasoning_content = self.text_reasoning.take();
        if let Some(reasoning) = self.calls_reasoning.take() {
            append(&mut reasoning_content, &reasoning);
        }
        self.out.push(OutMessage::Calls {
            role: "assistant",
            content,
            reasoning_content,
            tool_calls: calls,
        });
    }
}

/// A content's images as `image_url` parts, in order (opencode sends no `detail`).
fn images(content: &Content) -> Vec<OutPart> {
    let Content::Parts(parts) = content else {
        return Vec::new();
    };
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Image(image) => Some(OutPart::ImageUrl {
                image_url: OutImage {
                    url: image.url.clone(),
                },
            }),
            Part::Text(_) | Part::Other(_) => None,
        })
        .collect()
}

/// Reasoning of one turn given in several items: joined by a blank line.
fn append(to: &mut Option<String>, text: &str) {
    match to {
        Some(held) => {
            held.push_str("\n\n");
            held.push_str(text);
        }
        None => *to = Some(text.to_owned()),
    }
}
