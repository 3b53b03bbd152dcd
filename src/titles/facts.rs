//! What the title service needs to know about a request, whatever the harness.

use std::borrow::Cow;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::api::chat::{ChatRequest, Role};
use crate::clients::contextual::is_contextual;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationFacts {
    pub model: String,
    /// Every message is `system`, `developer` or `user`: nothing has been answered yet.
    pub initial_turn: bool,
    /// The first non-contextual user message's text (§2.2); empty when there is none.
    pub first_user_text: String,
    /// The request is the client's own title request (opencode sends one per new session).
    pub title_request: bool,
    /// The last non-contextual user message's text: what this turn asks (few-shot examples
    /// before it, as aider sends, are not the conversation's subject).
    pub last_user_text: String,
    /// One digest per answered exchange in the history (the user text before an assistant
    /// message, and that answer), oldest first, at most `MAX_EXCHANGES`: how a client that
    /// sends no conversation id is recognised from its second turn on.
    pub exchanges: Vec<ExchangeDigest>,
}

/// Only the first answers can start a conversation (after at most a few example exchanges, as
/// aider writes: six pairs at most); later ones need not be hashed.
pub const MAX_EXCHANGES: usize = 16;

/// A digest of one exchange: a user text and the answer that followed it.
pub type ExchangeDigest = [u8; 32];

/// The digest of `user_text` answered by `answer_text` (or, for an answer with no text, by its
/// tool-call ids, which are unique per answer). `None` for an answer with neither.
pub fn exchange_digest(
    user_text: &str,
    answer_text: &str,
    call_ids: &[&str],
) -> Option<ExchangeDigest> {
    exchange_of(&text_digest(user_text), answer_text, call_ids)
}

/// A user text's own digest: an agent loop answers one user text many times, so it is hashed
/// once, not once per answer.
fn text_digest(text: &str) -> ExchangeDigest {
    Sha256::digest(text.as_bytes()).into()
}

fn exchange_of(
    user: &ExchangeDigest,
    answer_text: &str,
    call_ids: &[&str],
) -> Option<ExchangeDigest> {
    let answer = answer_text.trim();
    let ids = call_ids.join(",");
    let answer = if answer.is_empty() {
        ids.as_str()
    } else {
        answer
    };
    if answer.is_empty() {
        return None;
    }
    let mut hasher = Sha256::new();
    hasher.update(b"exchange\0");
    hasher.update(user);
    hasher.update(answer.as_bytes());
    Some(hasher.finalize().into())
}

/// One message as the facts see it, whichever parser read it.
struct View<'a> {
    role: &'a str,
    parts: Vec<&'a str>,
    call_ids: Vec<&'a str>,
}

impl ConversationFacts {
    pub fn from_request(request: &ChatRequest) -> Self {
        let views = request.messages.iter().map(|m| View {
            role: match m.role {
                Role::System => "system",
                Role::Developer => "developer",
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool | Role::Function | Role::Other => "other",
            },
            parts: m.text_parts(),
            call_ids: m
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.as_deref())
                .collect(),
        });
        Self::from_views(request.model.clone(), views)
    }

    /// A read-only look at a body the harness forwards untouched: borrowed strings, every field
    /// but roles, text and call ids skipped. `None` when it is not a chat request.
    pub fn peek(body: &[u8]) -> Option<Self> {
        let peek: Peek<'_> = serde_json::from_slice(body).ok()?;
        let views = peek.messages.iter().map(|m| View {
            role: match &*m.role {
                role @ ("system" | "developer" | "user" | "assistant") => role,
                _ => "other",
            },
            parts: m
                .content
                .as_ref()
                .map(PeekContent::parts)
                .unwrap_or_default(),
            call_ids: m
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.as_deref())
                .collect(),
        });
        Some(Self::from_views(peek.model.into_owned(), views))
    }

    fn from_views<'a>(model: String, views: impl Iterator<Item = View<'a>>) -> Self {
        let mut initial_turn = true;
        let mut first_user_text = None;
        let mut last_user_text = None;
        // The digest of `last_user_text`, made when an answer to it is first seen.
        let mut user_digest: Option<ExchangeDigest> = None;
        let mut exchanges = Vec::new();
        for view in views {
            match view.role {
                "system" | "developer" => {}
                "user" => {
                    if let Some(words) = user_words(&view.parts) {
                        first_user_text.get_or_insert_with(|| words.clone());
                        last_user_text = Some(words);
                        user_digest = None;
                    }
                }
                role => {
                    initial_turn = false;
                    if role == "assistant" && exchanges.len() < MAX_EXCHANGES {
                        let user = *user_digest.get_or_insert_with(|| {
                            text_digest(last_user_text.as_deref().unwrap_or_default())
                        });
                        exchanges.extend(exchange_of(&user, &view.parts.concat(), &view.call_ids));
                    }
                }
            }
        }
        Self {
            model,
            initial_turn,
            first_user_text: first_user_text.unwrap_or_default(),
            title_request: false,
            last_user_text: last_user_text.unwrap_or_default(),
            exchanges,
        }
    }
}

/// What the user typed in one user message: `None` for a contextual message (§2.2, and Claude
/// Code's `<system-reminder>` blocks).
fn user_words(parts: &[&str]) -> Option<String> {
    (!is_contextual(parts.iter().copied())).then(|| parts.concat())
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
    #[serde(borrow, default)]
    tool_calls: Option<Vec<PeekCall<'a>>>,
}

#[derive(Deserialize)]
struct PeekCall<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
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
    fn parts(&self) -> Vec<&str> {
        match self {
            Self::Text(text) => vec![&**text],
            Self::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(&*p.kind, "text" | "input_text" | "output_text" | ""))
                .filter_map(|p| p.text.as_deref())
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
                {"role": "user", "content": "example"},
                {"role": "assistant", "content": "example answer"},
                {"role": "user", "content": [{"type": "text", "text": "real"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
                {"role": "assistant", "content": [{"type": "text", "text": " done "}]},
                {"role": "user", "content": "next"}
            ]}),
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

    /// Each answered exchange is digested with the user text it answers: an answer with no text
    /// by its call ids; the last user text is what this turn asks.
    #[test]
    fn exchanges_and_the_last_user_text() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "example"},
            {"role": "assistant", "content": "example answer"},
            {"role": "user", "content": "real"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            {"role": "assistant", "content": " done "},
            {"role": "user", "content": "next"}
        ]});
        let full: ChatRequest = serde_json::from_value(body).expect("parses");
        let facts = ConversationFacts::from_request(&full);
        assert_eq!(
            facts.exchanges,
            [
                exchange_digest("example", "example answer", &[]),
                exchange_digest("real", "", &["call_1"]),
                exchange_digest("real", "done", &[]),
            ]
            .map(Option::unwrap)
        );
        assert_eq!(
            (
                facts.first_user_text.as_str(),
                facts.last_user_text.as_str()
            ),
            ("example", "next")
        );
        assert_eq!(exchange_digest("u", " ", &[]), None);
        assert_ne!(
            exchange_digest("u", "a", &[]),
            exchange_digest("v", "a", &[])
        );
    }
}
