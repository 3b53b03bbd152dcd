//! What the title service needs to know about a request, whatever the harness.

use sha2::{Digest, Sha256};

use crate::clients::contextual;
use crate::conversation::view::{MessageView, ViewRole};
use crate::conversation::{Conversation, Role};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationFacts {
    pub model: String,
    /// Every message is `system`, `developer` or `user`: nothing has been answered yet.
    pub initial_turn: bool,
    /// The first non-contextual user message's text (`clients::contextual`), a compaction summary
    /// in first place skipped; empty when there is none.
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

/// `exchange_digest` over an answer read piece by piece, so that the answer's text is never held
/// (an answer streamed to a client is not bounded): the same normalization, kept as state — the
/// whitespace at the start dropped, the whitespace at a line's end and at the end held back until
/// text follows it.
pub struct ExchangeHasher {
    user: ExchangeDigest,
    hasher: Sha256,
    /// A non-whitespace character was seen.
    started: bool,
    /// Line breaks not yet written (written only if text follows them).
    newlines: usize,
    /// Whitespace after the last line break not yet written (a line's end, or the next line's
    /// indentation).
    pending: String,
}

impl ExchangeHasher {
    pub fn new(user_text: &str) -> Self {
        let user = text_digest(user_text);
        let mut hasher = Sha256::new();
        hasher.update(b"exchange\0");
        hasher.update(user);
        Self {
            user,
            hasher,
            started: false,
            newlines: 0,
            pending: String::new(),
        }
    }

    pub fn push(&mut self, text: &str) {
        let mut run = 0;
        for (at, c) in text.char_indices() {
            if !c.is_whitespace() {
                continue;
            }
            self.text_run(&text[run..at]);
            run = at + c.len_utf8();
            if !self.started {
                // Whitespace before the text is not part of it.
                continue;
            }
            if c == '\n' {
                self.pending.clear();
                self.newlines += 1;
            } else if self.pending.len() < MAX_PENDING {
                self.pending.push(c);
            } else {
                // A run of blanks this long within a line is hashed as far as it went; what
                // follows it is still hashed (bounded state, for any answer).
                self.flush_pending();
                self.pending.push(c);
            }
        }
        self.text_run(&text[run..]);
    }

    /// Text without whitespace: what was held back goes first, then it.
    fn text_run(&mut self, run: &str) {
        if run.is_empty() {
            return;
        }
        if self.started {
            self.flush_pending();
        } else {
            self.started = true;
            self.newlines = 0;
            self.pending.clear();
        }
        self.hasher.update(run.as_bytes());
    }

    fn flush_pending(&mut self) {
        for _ in 0..self.newlines {
            self.hasher.update(b"\n");
        }
        self.newlines = 0;
        self.hasher.update(self.pending.as_bytes());
        self.pending.clear();
    }

    /// The digest, as `exchange_digest` gives it for the whole answer.
    pub fn finish(self, call_ids: &[&str]) -> Option<ExchangeDigest> {
        if self.started {
            return Some(self.hasher.finalize().into());
        }
        exchange_of(&self.user, "", call_ids)
    }
}

/// The most whitespace held back at once (`ExchangeHasher`).
const MAX_PENDING: usize = 64 * 1024;

/// A user text's own digest: an agent loop answers one user text many times, so it is hashed
/// once, not once per answer.
fn text_digest(text: &str) -> ExchangeDigest {
    let mut hasher = Sha256::new();
    hash_normalized(&mut hasher, text);
    hasher.finalize().into()
}

/// Hashes `text` without the whitespace around it and at its lines' ends: a client that reads its
/// history back from a file of its own (aider's `--restore-chat-history`, from markdown with a
/// `  ` at every line's end) sends the same exchange with whitespace that never meant anything.
fn hash_normalized(hasher: &mut Sha256, text: &str) {
    for (n, line) in text.trim().split('\n').enumerate() {
        if n > 0 {
            hasher.update(b"\n");
        }
        hasher.update(line.trim_end().as_bytes());
    }
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
    hash_normalized(&mut hasher, answer);
    Some(hasher.finalize().into())
}

impl ConversationFacts {
    /// The facts of a parsed request.
    pub fn from_conversation(conversation: &Conversation) -> Self {
        Self::from_views(conversation.model.clone(), conversation.views())
    }

    /// The facts of a client's own title request: the text being titled is its last user message.
    pub fn of_title_request(conversation: &Conversation) -> Self {
        Self {
            model: conversation.model.clone(),
            initial_turn: false,
            first_user_text: conversation
                .messages()
                .filter(|m| m.role == Role::User)
                .last()
                .map(|m| m.content.text().into_owned())
                .unwrap_or_default(),
            title_request: true,
            last_user_text: String::new(),
            exchanges: Vec::new(),
        }
    }

    /// The facts of a request seen message by message (`Conversation::views`, or a peek at bytes
    /// forwarded untouched).
    pub fn from_views<'a>(model: String, views: impl IntoIterator<Item = MessageView<'a>>) -> Self {
        let mut initial_turn = true;
        let mut first_user_text = None;
        let mut last_user_text = None;
        // The digest of `last_user_text`, made when an answer to it is first seen.
        let mut user_digest: Option<ExchangeDigest> = None;
        let mut exchanges = Vec::new();
        for view in views {
            match view.role {
                ViewRole::System | ViewRole::Developer => {}
                ViewRole::User => {
                    // What the user typed: the parts that are not context (Claude Code's `<system-reminder>`
                    // blocks, Gemini CLI's `<session_context>`); none for a message of context only.
                    if let Some(words) = contextual::user_words(&view.parts) {
                        // A compaction summary in first place is the agent's recap of an earlier
                        // conversation, not what the user asks (the title contract skips it).
                        if first_user_text.is_none() && contextual::is_compaction_summary(&words) {
                            continue;
                        }
                        first_user_text.get_or_insert_with(|| words.clone());
                        last_user_text = Some(words);
                        user_digest = None;
                    }
                }
                role => {
                    initial_turn = false;
                    if role == ViewRole::Assistant && exchanges.len() < MAX_EXCHANGES {
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Read in any pieces, an answer hashes as it does whole: text, blanks, tabs, carriage
        /// returns, line breaks and non-ASCII whitespace, in any order.
        #[test]
        fn an_answer_hashed_piece_by_piece_is_the_answer_hashed_whole(
            parts in proptest::collection::vec("[ab \t\r\n\u{a0}\u{2028}é]{0,12}", 0..8),
            ids in proptest::collection::vec("[a-z0-9]{1,6}", 0..3),
        ) {
            let answer: String = parts.concat();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut hasher = ExchangeHasher::new("fix it");
            for part in &parts {
                hasher.push(part);
            }
            proptest::prop_assert_eq!(hasher.finish(&ids), exchange_digest("fix it", &answer, &ids));
        }
    }
    use crate::conversation::{CallInput, Content, Item, Message, ToolCall, ToolResult};

    /// Each answered exchange is digested with the user text it answers: an answer with no text
    /// by its call ids; the last user text is what this turn asks.
    #[test]
    fn exchanges_and_the_last_user_text() {
        let conversation = Conversation {
            model: "m".into(),
            items: vec![
                Item::Message(Message::text(Role::User, "example")),
                Item::Message(Message::text(Role::Assistant, "example answer")),
                Item::Message(Message::text(Role::User, "real")),
                Item::ToolCall(ToolCall {
                    id: Some("call_1".into()),
                    name: "bash".into(),
                    input: CallInput::Arguments("{}".into()),
                }),
                Item::ToolResult(ToolResult {
                    call_id: Some("call_1".into()),
                    content: Content::Text("ok".into()),
                    is_error: false,
                }),
                Item::Message(Message::text(Role::Assistant, " done ")),
                Item::Message(Message::text(Role::User, "next")),
            ],
            ..Conversation::default()
        };
        let facts = ConversationFacts::from_conversation(&conversation);
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

    /// A compaction summary in first place is skipped: the words after it are the first.
    #[test]
    fn a_compaction_summary_in_first_place_is_not_the_first_user_text() {
        for summary in [
            "This session is being continued from a previous conversation that ran out of context. The summary below covers it: fixed the login.",
            "Another language model started to solve this problem and produced a summary of its thinking process. Here: tests added.",
            "<state_snapshot>\n<overall_goal>fix login</overall_goal>\n</state_snapshot>",
        ] {
            let conversation = Conversation {
                model: "m".into(),
                items: vec![
                    Item::Message(Message::text(Role::User, summary)),
                    Item::Message(Message::text(Role::User, "now add the tests")),
                ],
                ..Conversation::default()
            };
            let facts = ConversationFacts::from_conversation(&conversation);
            assert_eq!(facts.first_user_text, "now add the tests", "{summary}");
        }
        // Later, the same words are the user's own (quoted back, say): kept.
        let conversation = Conversation {
            model: "m".into(),
            items: vec![
                Item::Message(Message::text(Role::User, "first")),
                Item::Message(Message::text(
                    Role::User,
                    "<state_snapshot>x</state_snapshot>",
                )),
            ],
            ..Conversation::default()
        };
        let facts = ConversationFacts::from_conversation(&conversation);
        assert_eq!(facts.first_user_text, "first");
        assert_eq!(facts.last_user_text, "<state_snapshot>x</state_snapshot>");
    }
}
