//! What the title service needs to know about a request, whatever the harness.

use super::opencode::contextual::is_contextual;
use crate::api::chat::{ChatRequest, Role};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationFacts {
    pub model: String,
    /// Every message is `system`, `developer` or `user`: nothing has been answered yet.
    pub initial_turn: bool,
    /// The first non-contextual user message's text (§2.2); empty when there is none.
    pub first_user_text: String,
}

impl ConversationFacts {
    pub fn from_request(request: &ChatRequest) -> Self {
        let initial_turn = request
            .messages
            .iter()
            .all(|m| matches!(m.role, Role::System | Role::Developer | Role::User));
        let first_user_text = request
            .messages
            .iter()
            .find(|m| m.role == Role::User && !is_contextual(m.text_parts()))
            .map(crate::api::chat::Message::text)
            .unwrap_or_default();
        Self {
            model: request.model.clone(),
            initial_turn,
            first_user_text,
        }
    }

    /// A read-only look at a body the harness forwards untouched; `None` when it is not a request.
    pub fn peek(body: &[u8]) -> Option<Self> {
        serde_json::from_slice::<ChatRequest>(body)
            .ok()
            .map(|r| Self::from_request(&r))
    }
}
