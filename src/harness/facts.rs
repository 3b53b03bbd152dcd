//! What the title service needs to know about a request, whatever the harness.

use std::borrow::Cow;

use serde::Deserialize;

use super::opencode::contextual::is_contextual;
use super::opencode::instructions::is_project_memory;
use crate::api::chat::{ChatRequest, Role};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationFacts {
    pub model: String,
    /// Every message is `system`, `developer` or `user`: nothing has been answered yet.
    pub initial_turn: bool,
    /// The first non-contextual user message's text (§2.2); empty when there is none.
    pub first_user_text: String,
    /// The request is the client's own title request (opencode sends one per new session).
    pub title_request: bool,
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
            .filter(|m| m.role == Role::User)
            .find_map(|m| user_words(&m.text_parts()))
            .unwrap_or_default();
        Self {
            model: request.model.clone(),
            initial_turn,
            first_user_text,
            title_request: false,
        }
    }

    /// A read-only look at a body the harness forwards untouched: borrowed strings, every field
    /// but roles and text skipped. `None` when it is not a chat request.
    pub fn peek(body: &[u8]) -> Option<Self> {
        let peek: Peek<'_> = serde_json::from_slice(body).ok()?;
        let initial_turn = peek
            .messages
            .iter()
            .all(|m| matches!(&*m.role, "system" | "developer" | "user"));
        let first_user_text = peek
            .messages
            .iter()
            .filter(|m| m.role == "user")
            .find_map(|m| {
                let parts = m
                    .content
                    .as_ref()
                    .map(PeekContent::parts)
                    .unwrap_or_default();
                user_words(&parts.iter().map(|p| &**p).collect::<Vec<_>>())
            })
            .unwrap_or_default();
        Some(Self {
            model: peek.model.into_owned(),
            initial_turn,
            first_user_text,
            title_request: false,
        })
    }
}

/// What the user typed in one user message: `None` for a contextual message (§2.2) or one that
/// holds only Claude Code's project-memory reminder; otherwise the text parts without that
/// reminder (instructions, not words to title or to tell conversations apart by).
fn user_words(parts: &[&str]) -> Option<String> {
    if is_contextual(parts.iter().copied()) {
        return None;
    }
    let words: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| !is_project_memory(p))
        .collect();
    if words.is_empty() && !parts.is_empty() {
        return None;
    }
    Some(words.concat())
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    model: Cow<'a, str>,
    #[serde(borrow)]
    messages: Vec<PeekMessage<'a>>,
}

#[derive(Deserialize)]
struct PeekMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<PeekContent<'a>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PeekContent<'a> {
    #[serde(borrow)]
    Text(Cow<'a, str>),
    #[serde(borrow)]
    Parts(Vec<PeekPart<'a>>),
}

#[derive(Deserialize)]
struct PeekPart<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl PeekContent<'_> {
    /// The text parts, as `Message::text_parts` sees them.
    fn parts(&self) -> Vec<Cow<'_, str>> {
        match self {
            Self::Text(text) => vec![Cow::Borrowed(&**text)],
            Self::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(&*p.kind, "text" | "input_text" | "output_text" | ""))
                .filter_map(|p| p.text.as_deref().map(Cow::Borrowed))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The peek must agree with the full parse on every shape of input.
    #[test]
    fn peek_agrees_with_the_typed_parse() {
        let bodies = [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi \"there\"\n"}]}),
            json!({"model": "m", "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "input_text", "text": "b"}]}
            ]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": []}]}),
            json!({"model": "m", "messages": [{"role": "developer", "content": "d"}]}),
            json!({"model": "m", "messages": [
                {"role": "user", "content": "<system-reminder>\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nUse pnpm.\n</system-reminder>"},
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nx\n</system-reminder>"}, {"type": "text", "text": "Go"}]}
            ]}),
        ];
        for body in bodies {
            let bytes = serde_json::to_vec(&body).expect("json");
            let full: ChatRequest = serde_json::from_slice(&bytes).expect("parses");
            assert_eq!(
                ConversationFacts::peek(&bytes),
                Some(ConversationFacts::from_request(&full)),
                "{body}"
            );
        }
        assert_eq!(ConversationFacts::peek(b"not json"), None);
    }

    /// Claude Code's project memory is instructions, not the user's words.
    #[test]
    fn project_memory_is_not_the_first_user_text() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nx\n</system-reminder>"}, {"type": "text", "text": "Go"}]}
        ]});
        let full: ChatRequest = serde_json::from_value(body).expect("parses");
        assert_eq!(ConversationFacts::from_request(&full).first_user_text, "Go");
    }
}
