//! A borrowed look at one message — its role, its text parts, the ids of the calls it made — the
//! shape the title facts are computed from. The model gives it (`Conversation::views`), and so can
//! a reader that never builds the model (`protocols::chat::peek`, for bodies passthrough forwards
//! untouched), so both agree by construction.

use super::{Conversation, Item, Role};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewRole {
    System,
    Developer,
    User,
    Assistant,
    /// Tool results and anything else that is not a message of the conversation's text.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageView<'a> {
    pub role: ViewRole,
    /// Text parts, images and other parts left out.
    pub parts: Vec<&'a str>,
    /// Ids of the tool calls an assistant message made.
    pub call_ids: Vec<&'a str>,
}

impl Conversation {
    /// One view per message as Chat Completions would carry it: an assistant text and the calls
    /// right after it are one message; calls with no text before them are a message of their own;
    /// reasoning is not a message.
    pub fn views(&self) -> Vec<MessageView<'_>> {
        let mut views: Vec<MessageView<'_>> = Vec::with_capacity(self.items.len());
        // Whether the last view is an assistant turn that later calls still join.
        let mut open_turn = false;
        for item in &self.items {
            match item {
                Item::Message(message) => {
                    let role = match message.role {
                        Role::System => ViewRole::System,
                        Role::Developer => ViewRole::Developer,
                        Role::User => ViewRole::User,
                        Role::Assistant => ViewRole::Assistant,
                    };
                    open_turn = role == ViewRole::Assistant;
                    views.push(MessageView {
                        role,
                        parts: message.content.text_parts(),
                        call_ids: Vec::new(),
                    });
                }
                Item::ToolCall(call) => {
                    let id = call.id.as_deref();
                    match views.last_mut().filter(|_| open_turn) {
                        Some(turn) => turn.call_ids.extend(id),
                        None => {
                            open_turn = true;
                            views.push(MessageView {
                                role: ViewRole::Assistant,
                                parts: Vec::new(),
                                call_ids: id.into_iter().collect(),
                            });
                        }
                    }
                }
                Item::ToolResult(result) => {
                    open_turn = false;
                    views.push(MessageView {
                        role: ViewRole::Other,
                        parts: result.content.text_parts(),
                        call_ids: Vec::new(),
                    });
                }
                Item::Reasoning(_) => {}
            }
        }
        views
    }
}
