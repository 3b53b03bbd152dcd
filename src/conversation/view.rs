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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Content, Message, Reasoning, ToolCall, ToolResult};

    fn call(id: &str) -> Item {
        Item::ToolCall(ToolCall {
            id: Some(id.into()),
            name: "bash".into(),
            input: CallInput::Arguments("{}".into()),
        })
    }

    fn result(id: &str) -> Item {
        Item::ToolResult(ToolResult {
            call_id: Some(id.into()),
            content: Content::Text("ok".into()),
            is_error: false,
        })
    }

    /// Calls join the assistant text before them (reasoning between does not split the turn);
    /// a result closes the turn, so calls after it open an assistant message of their own.
    #[test]
    fn calls_join_their_turn_and_results_close_it() {
        let conversation = Conversation {
            items: vec![
                Item::Message(Message::text(Role::User, "go")),
                Item::Message(Message::text(Role::Assistant, "on it")),
                Item::Reasoning(Reasoning::default()),
                call("a"),
                call("b"),
                result("a"),
                call("c"),
                result("c"),
                Item::Message(Message::text(Role::Assistant, "done")),
            ],
            ..Conversation::default()
        };
        let views = conversation.views();
        let shape: Vec<(ViewRole, Vec<&str>, Vec<&str>)> = views
            .into_iter()
            .map(|v| (v.role, v.parts, v.call_ids))
            .collect();
        assert_eq!(
            shape,
            [
                (ViewRole::User, vec!["go"], vec![]),
                (ViewRole::Assistant, vec!["on it"], vec!["a", "b"]),
                (ViewRole::Other, vec!["ok"], vec![]),
                (ViewRole::Assistant, vec![], vec!["c"]),
                (ViewRole::Other, vec!["ok"], vec![]),
                (ViewRole::Assistant, vec!["done"], vec![]),
            ]
        );
    }

    /// A user message between an answer and a call means the call opens a new turn.
    #[test]
    fn a_call_after_a_user_message_opens_its_own_turn() {
        let conversation = Conversation {
            items: vec![
                Item::Message(Message::text(Role::Assistant, "hi")),
                Item::Message(Message::text(Role::User, "run it")),
                call("x"),
            ],
            ..Conversation::default()
        };
        let roles: Vec<(ViewRole, usize)> = conversation
            .views()
            .iter()
            .map(|v| (v.role, v.call_ids.len()))
            .collect();
        assert_eq!(
            roles,
            [
                (ViewRole::Assistant, 0),
                (ViewRole::User, 0),
                (ViewRole::Assistant, 1)
            ]
        );
    }
}
