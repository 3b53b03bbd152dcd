//! The reasoning of answers that ended in tool calls, kept for clients that echo none of it back.
//!
//! Thinking models in thinking mode (DeepSeek V4, Kimi K2 thinking, GLM) refuse an assistant
//! message with `tool_calls` that lacks its `reasoning_content`. Claude Code and Codex carry the
//! reasoning back in the proxy's seal (`conversation::seal`), opencode in `reasoning_content`;
//! most other clients (pi, Qwen Code, Cline, aider, SDK scripts) drop it. The proxy saw the
//! answer, so it remembers the reasoning under the answer's call ids, per caller, and the next
//! turn that echoes those calls without reasoning gets it back (`recover`).
//!
//! Owns: a bounded, in-process map of (caller, call id) fingerprints to reasoning texts, oldest
//! forgotten first (by count and by bytes). Must not: override reasoning a client did echo, or
//! keep an entry past its bounds. Replicas do not share it: a turn served by another replica
//! than the one that answered finds nothing and goes as before (see docs/configuration.md).

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use crate::conversation::{Item, Reasoning, Role};

/// Total reasoning bytes kept.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// One answer's reasoning longer than this is not kept (it would push out hundreds of others).
pub const MAX_ENTRY_BYTES: usize = 256 * 1024;

pub struct ReasoningMemo {
    inner: Mutex<Inner>,
    /// A per-process seed, so that fingerprints cannot be aimed at from outside.
    hasher: std::collections::hash_map::RandomState,
    max_bytes: usize,
}

#[derive(Default)]
struct Inner {
    texts: HashMap<u64, Arc<str>>,
    /// Insertion order with each entry's size, for forgetting the oldest.
    order: VecDeque<(u64, usize)>,
    bytes: usize,
}

impl Default for ReasoningMemo {
    fn default() -> Self {
        Self::with_max_bytes(MAX_BYTES)
    }
}

impl ReasoningMemo {
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            hasher: std::collections::hash_map::RandomState::new(),
            max_bytes,
        }
    }

    fn fingerprint(&self, owner: &str, call_id: &str) -> u64 {
        self.hasher.hash_one((owner, call_id))
    }

    /// Remembers `reasoning` as that of the answer whose calls have `call_ids`.
    pub fn remember(&self, owner: &str, call_ids: &[String], reasoning: &str) {
        if reasoning.is_empty() || reasoning.len() > MAX_ENTRY_BYTES || call_ids.is_empty() {
            return;
        }
        let text: Arc<str> = Arc::from(reasoning);
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        for id in call_ids.iter().filter(|id| !id.is_empty()) {
            let key = self.fingerprint(owner, id);
            if let Some(old) = inner.texts.insert(key, text.clone()) {
                inner.bytes -= old.len();
            } else {
                inner.order.push_back((key, text.len()));
            }
            inner.bytes += text.len();
        }
        while inner.bytes > self.max_bytes {
            let Some((oldest, _)) = inner.order.pop_front() else {
                break;
            };
            if let Some(old) = inner.texts.remove(&oldest) {
                inner.bytes -= old.len();
            }
        }
    }

    fn recall(&self, owner: &str, call_id: &str) -> Option<Arc<str>> {
        let key = self.fingerprint(owner, call_id);
        self.inner.lock().ok()?.texts.get(&key).cloned()
    }

    /// Gives each assistant turn with calls but no reasoning the reasoning remembered for its
    /// first call, as a reasoning item where the client would have put one (before the turn's
    /// assistant text, else before its first call).
    pub fn recover(&self, owner: &str, items: &mut Vec<Item>) {
        let mut i = 0;
        while i < items.len() {
            let starts_calls = matches!(items[i], Item::ToolCall(_))
                && (i == 0 || !matches!(items[i - 1], Item::ToolCall(_)));
            if !starts_calls {
                i += 1;
                continue;
            }
            let mut start = i;
            if start > 0
                && let Item::Message(message) = &items[start - 1]
                && message.role == Role::Assistant
            {
                start -= 1;
            }
            let reasoned =
                start > 0 && matches!(&items[start - 1], Item::Reasoning(r) if !r.text.is_empty());
            let Item::ToolCall(call) = &items[i] else {
                unreachable!("checked above");
            };
            let found = (!reasoned)
                .then_some(call.id.as_deref())
                .flatten()
                .and_then(|id| self.recall(owner, id));
            if let Some(text) = found {
                let item = Item::Reasoning(Reasoning {
                    text: text.to_string(),
                    opaque: None,
                    sealed: None,
                });
                items.insert(start, item);
                i += 1;
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Message, ToolCall};

    fn call(id: &str) -> Item {
        Item::ToolCall(ToolCall {
            id: Some(id.to_owned()),
            name: "bash".to_owned(),
            input: CallInput::Arguments("{}".to_owned()),
        })
    }

    fn reasoning_of(items: &[Item]) -> Vec<(usize, String)> {
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Item::Reasoning(r) => Some((i, r.text.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_turn_without_reasoning_gets_what_its_answer_had_before_its_text() {
        let memo = ReasoningMemo::default();
        memo.remember("a", &["call_1".into(), "call_2".into()], "I will run ls.");
        let mut items = vec![
            Item::Message(Message::text(Role::User, "list")),
            Item::Message(Message::text(Role::Assistant, "Listing.")),
            call("call_1"),
            call("call_2"),
        ];
        memo.recover("a", &mut items);
        assert_eq!(reasoning_of(&items), [(1, "I will run ls.".to_owned())]);
        assert_eq!(items.len(), 5);
    }

    #[test]
    fn echoed_reasoning_wins_and_another_caller_finds_nothing() {
        let memo = ReasoningMemo::default();
        memo.remember("a", &["call_1".into()], "remembered");
        let echoed = vec![
            Item::Reasoning(Reasoning {
                text: "echoed".into(),
                ..Reasoning::default()
            }),
            call("call_1"),
        ];
        let mut items = echoed.clone();
        memo.recover("a", &mut items);
        assert_eq!(items, echoed);
        let mut theirs = vec![call("call_1")];
        memo.recover("b", &mut theirs);
        assert_eq!(reasoning_of(&theirs), []);
    }

    #[test]
    fn the_oldest_reasoning_goes_first_past_the_byte_bound() {
        let memo = ReasoningMemo::with_max_bytes(10);
        memo.remember("a", &["one".into()], "123456");
        memo.remember("a", &["two".into()], "abcdef");
        let mut items = vec![call("one"), Item::ToolResult(result("one")), call("two")];
        memo.recover("a", &mut items);
        assert_eq!(reasoning_of(&items), [(2, "abcdef".to_owned())]);
    }

    fn result(id: &str) -> crate::conversation::ToolResult {
        crate::conversation::ToolResult {
            call_id: Some(id.to_owned()),
            content: crate::conversation::Content::Text("ok".to_owned()),
            is_error: false,
        }
    }
}
