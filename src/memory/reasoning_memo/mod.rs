//! The reasoning of answers that ended in tool calls, kept for clients that echo none of it back.
//!
//! Thinking models in thinking mode (DeepSeek V4, Kimi K2 thinking, GLM) refuse an assistant
//! message with `tool_calls` that lacks its `reasoning_content`. Claude Code and Codex carry the
//! reasoning back in the proxy's seal (`conversation::seal`), opencode in `reasoning_content`;
//! most other clients (pi, Qwen Code, Cline, aider, SDK scripts) drop it. The proxy saw the
//! answer, so it remembers the reasoning once per answer, its call ids as references to it, per
//! caller, and the next turn that echoes those calls without reasoning gets it back (`recover`).
//! Only a caller with a credential has a scope of its own: callers without one would share
//! theirs, so the route gives them no memo at all (their own seal is all they can prove).
//!
//! Conversation memory opens it (`ReasoningMemo::open`, over the shared `store` backend);
//! `memory::answer_tap` feeds it and `routes::inbound` reads it.
//!
//! Two levels: the process-local map (`local`; a hit costs no round trip), and, beside it, the
//! shared store backend (`shared`: tables in the SQLite file, keys with a TTL in Redis; nothing
//! for `memory`), so a turn answered by one replica and continued on another finds it too.
//! Writes to the store go on a tracked task, never awaited by the answer; a turn reads the store
//! only for the turns the local map does not know (`recover` names them, `recover_shared` looks
//! them up, within `READ_TIMEOUT`), and a failure or a timeout there means "nothing found".
//!
//! Both levels enforce their bounds as they write (`Bounds`: bytes and rows, per caller and in
//! total; an answer counts its reasoning once and `REF_BYTES` per call id): past one, the oldest
//! entries go, counted in `harness_proxy_reasoning_memo_evicted_total`.
//!
//! Owns: what is remembered, where, and its bounds (one answer at most `MAX_ENTRY_BYTES` and
//! `MAX_CALLS_PER_ANSWER` calls; the local map `LOCAL_BOUNDS`; the store `SHARED_TTL` and
//! `STORE_BOUNDS`). Must not: override reasoning a client did echo, fail or hold up a request,
//! or keep an entry past its bounds.

#[cfg(test)]
mod contract;
#[cfg(test)]
mod contract_signed;
mod local;
mod redis;
pub mod shared;
pub mod sqlite;
mod thought;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::conversation::{Item, Role};
use crate::store::{Backend, StoreError};
use local::{Known, Local};
pub use shared::{Entry, READ_TIMEOUT, SHARED_TTL, SharedMemo};
use shared::{Shared, key};
pub use thought::Thought;

/// One answer's reasoning (its text, signature and redacted thinking) longer than this is not
/// kept (it would push out hundreds of others).
pub const MAX_ENTRY_BYTES: usize = 256 * 1024;
/// Call ids of one answer remembered at most (the first ones): an agent's answer makes a few;
/// the probe of issue 30 made 2,000.
pub const MAX_CALLS_PER_ANSWER: usize = 4_096;
/// What one call id's reference counts against a byte bound, in the map and in the store (its
/// key, and the reference's bookkeeping).
pub const REF_BYTES: u64 = 64;
/// The process-local map: 32 MiB, a caller a quarter of it.
pub const LOCAL_BOUNDS: Bounds = Bounds::with_caller_share(Usage {
    bytes: 32 * 1024 * 1024,
    rows: 200_000,
});
/// The shared store (SQLite tables, Redis keys): 128 MiB and 100,000 rows (an answer is one
/// row, each of its call ids one more), a caller a quarter of it.
pub const STORE_BOUNDS: Bounds = Bounds::with_caller_share(Usage {
    bytes: 128 * 1024 * 1024,
    rows: 100_000,
});

/// What entries count against a bound: their bytes (reasoning, `REF_BYTES` a call id) and rows
/// (one an answer, one a call id).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub rows: u64,
}

impl Usage {
    /// One answer's usage: its reasoning once, and each of its `calls`.
    pub fn of_answer(text_bytes: usize, calls: usize) -> Self {
        Self {
            bytes: text_bytes as u64 + calls as u64 * REF_BYTES,
            rows: 1 + calls as u64,
        }
    }

    pub fn within(self, bound: Usage) -> bool {
        self.bytes <= bound.bytes && self.rows <= bound.rows
    }

    fn plus(self, other: Usage) -> Usage {
        Usage {
            bytes: self.bytes + other.bytes,
            rows: self.rows + other.rows,
        }
    }

    fn minus(self, other: Usage) -> Usage {
        Usage {
            bytes: self.bytes.saturating_sub(other.bytes),
            rows: self.rows.saturating_sub(other.rows),
        }
    }
}

/// A memo's bounds, enforced at every write: one caller's entries, and everyone's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub caller: Usage,
    pub total: Usage,
}

impl Bounds {
    /// `total`, a caller a quarter of it: one client filling the memo pushes out its own oldest
    /// answers, not everyone's.
    pub const fn with_caller_share(total: Usage) -> Self {
        Self {
            caller: Usage {
                bytes: total.bytes / 4,
                rows: total.rows / 4,
            },
            total,
        }
    }
}

/// How many entries a write pushed out, by the bound that was full.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Past the caller's own bound: its oldest.
    pub caller: u64,
    /// Past the total: everyone's oldest.
    pub total: u64,
}

impl Evicted {
    /// Counts them in `harness_proxy_reasoning_memo_evicted_total{memo}`.
    fn count(self, memo: &'static str) {
        for (bound, n) in [("caller", self.caller), ("total", self.total)] {
            if n > 0 {
                metrics::counter!("harness_proxy_reasoning_memo_evicted_total", "memo" => memo, "bound" => bound)
                    .increment(n);
            }
        }
    }
}

pub struct ReasoningMemo {
    local: Local,
    /// The shared store backend, when other processes can read it.
    shared: Option<Shared>,
}

/// The call ids of turns the local map knew nothing of, oldest turn first: what to ask the
/// shared store for. Empty without one.
#[derive(Debug, Default)]
pub struct Misses(Vec<String>);

impl Misses {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Default for ReasoningMemo {
    fn default() -> Self {
        Self::with_bounds(LOCAL_BOUNDS, None)
    }
}

impl ReasoningMemo {
    /// A memo whose local map has `bounds`, and whose entries also go to `shared` (when given).
    pub fn with_bounds(bounds: Bounds, shared: Option<Arc<dyn SharedMemo>>) -> Self {
        Self {
            local: Local::new(bounds),
            shared: shared.map(Shared::new),
        }
    }

    /// A memo whose entries also go to `shared` (when given).
    pub fn new(shared: Option<Arc<dyn SharedMemo>>) -> Self {
        Self::with_bounds(LOCAL_BOUNDS, shared)
    }

    /// The same memo, waiting up to `timeout` for the shared store's answer (`READ_TIMEOUT`
    /// unless set).
    #[must_use]
    pub fn read_within(mut self, timeout: Duration) -> Self {
        if let Some(shared) = &mut self.shared {
            shared.read_within(timeout);
        }
        self
    }

    /// The memo over the backend `titles.store` names (none for `memory`: the local map is all
    /// there is), reading it within `read_timeout`.
    pub fn open(backend: &Backend, read_timeout: Duration) -> Result<Self, StoreError> {
        let shared: Option<Arc<dyn SharedMemo>> = match backend {
            Backend::Memory => None,
            Backend::Sqlite(file) => Some(Arc::new(sqlite::SqliteMemo::on(file, STORE_BOUNDS)?)),
            Backend::Redis(server) => {
                Some(Arc::new(redis::RedisMemo::on(server.clone(), STORE_BOUNDS)))
            }
        };
        Ok(Self::new(shared).read_within(read_timeout))
    }

    /// Remembers `reasoning` (its text, and the server's signature and redacted thinking) once as
    /// that of the answer whose calls have `call_ids` (the first `MAX_CALLS_PER_ANSWER`; an empty
    /// one as "nothing to find", here only); the store's copy is written off the caller's path.
    pub fn remember(&self, owner: &str, call_ids: &[String], reasoning: impl Into<Thought>) {
        let reasoning = reasoning.into();
        let ids: Vec<&str> = call_ids
            .iter()
            .map(String::as_str)
            .filter(|id| !id.is_empty())
            .take(MAX_CALLS_PER_ANSWER)
            .collect();
        if ids.is_empty() || reasoning.bytes() > MAX_ENTRY_BYTES {
            return;
        }
        if reasoning.is_empty() {
            self.local.insert(owner, ids, Known::Nothing).count("local");
            return;
        }
        let thought = Arc::new(reasoning);
        self.local
            .insert(
                owner,
                ids.iter().copied(),
                Known::Reasoning(thought.clone()),
            )
            .count("local");
        if let Some(shared) = &self.shared {
            let keys = ids.iter().map(|id| key(owner, id)).collect();
            shared.write(owner.to_owned(), keys, thought);
        }
    }

    /// Gives each assistant turn with calls but no reasoning what this process remembers for
    /// its first call; returns the turns it knows nothing of, for `recover_shared`.
    pub fn recover(&self, owner: &str, items: &mut Vec<Item>) -> Misses {
        let mut misses = Vec::new();
        fill_bare_turns(items, |id| match self.local.get(owner, id) {
            Some(Known::Reasoning(thought)) => Some(thought),
            Some(Known::Nothing) => None,
            None => {
                misses.push(id.to_owned());
                None
            }
        });
        if self.shared.is_none() {
            misses.clear();
        }
        Misses(misses)
    }

    /// Looks `misses` up in the shared store (within the read timeout) and fills the turns found;
    /// what is found is kept here too. Absent ones are noted as such, except the newest turn's,
    /// whose answer's write may still be on its way from another replica.
    pub async fn recover_shared(&self, owner: &str, items: &mut Vec<Item>, misses: Misses) {
        let (Some(shared), Misses(ids)) = (&self.shared, misses) else {
            return;
        };
        if ids.is_empty() {
            return;
        }
        let keys: Vec<String> = ids.iter().map(|id| key(owner, id)).collect();
        let Some(found) = shared.read(owner, &keys).await else {
            return;
        };
        let newest = ids.len() - 1;
        let mut thoughts: HashMap<&str, Arc<Thought>> = HashMap::new();
        for (i, (id, thought)) in ids.iter().zip(found).enumerate() {
            match thought {
                Some(thought) => {
                    let thought = Arc::new(thought);
                    self.local
                        .insert(owner, [id.as_str()], Known::Reasoning(thought.clone()))
                        .count("local");
                    thoughts.insert(id, thought);
                }
                None if i < newest => self
                    .local
                    .insert(owner, [id.as_str()], Known::Nothing)
                    .count("local"),
                None => {}
            }
        }
        fill_bare_turns(items, |id| thoughts.get(id).cloned());
    }

    /// Drops the shared store's expired and excess entries (the title service's upkeep).
    pub async fn prune(&self) -> Result<u64, StoreError> {
        match &self.shared {
            Some(shared) => shared.store.prune().await,
            None => Ok(0),
        }
    }

    /// What the local map counts against its bounds.
    pub fn local_usage(&self) -> Usage {
        self.local.usage()
    }

    /// Waits until the store writes started so far have ended (tests, a deliberate hand-over).
    pub async fn settled(&self) {
        if let Some(shared) = &self.shared {
            shared.settled().await;
        }
    }

    /// Waits up to `within` for store writes in flight (shutdown).
    pub async fn drain(&self, within: Duration) {
        if let Some(shared) = &self.shared {
            shared.drain(within).await;
        }
    }
}

/// For each assistant turn with calls but no reasoning, asks `find` about its first call's id
/// and puts what it gives as a reasoning item where the client would have put one (before the
/// turn's assistant text, else before its first call).
fn fill_bare_turns(items: &mut Vec<Item>, mut find: impl FnMut(&str) -> Option<Arc<Thought>>) {
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
        let echoed = start.checked_sub(1).filter(|&r| {
            matches!(&items[r], Item::Reasoning(r) if !r.text.is_empty() || !r.redacted.is_empty())
        });
        let Item::ToolCall(call) = &items[i] else {
            unreachable!("checked above");
        };
        let id = call.id.clone();
        match echoed {
            None => {
                if let Some(thought) = id.as_deref().and_then(&mut find) {
                    items.insert(start, Item::Reasoning(thought.to_reasoning()));
                    i += 1;
                }
            }
            Some(r) => sign_echoed(&mut items[r], id.as_deref(), &mut find),
        }
        i += 1;
    }
}

/// A client that echoes the reasoning's text but not the server's signature (pi and other Chat
/// clients send `reasoning_content` back): a Messages server refuses the thinking block unsigned,
/// so the signature and redacted thinking the memo kept for that answer are added, but only when
/// the echoed text is the text the server signed (anything else would carry a signature that no
/// longer matches). A turn that carries its own signature or redacted thinking is left alone.
fn sign_echoed(
    item: &mut Item,
    call_id: Option<&str>,
    find: &mut impl FnMut(&str) -> Option<Arc<Thought>>,
) {
    let Item::Reasoning(reasoning) = item else {
        return;
    };
    if reasoning.signature.is_some() || reasoning.sealed.is_some() || !reasoning.redacted.is_empty()
    {
        return;
    }
    let Some(thought) = call_id.and_then(find) else {
        return;
    };
    if thought.text == reasoning.text && thought.signature.is_some() {
        reasoning.signature.clone_from(&thought.signature);
        reasoning.redacted.clone_from(&thought.redacted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{CallInput, Message, Reasoning, ToolCall};

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

    #[tokio::test]
    async fn satisfies_the_memo_contract_in_memory() {
        super::contract::run(|_| None, None).await;
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
    fn an_echoed_text_without_its_signature_gets_the_signature_the_server_gave_it() {
        let memo = ReasoningMemo::default();
        let signed = Thought {
            text: "I will run ls.".into(),
            signature: Some("c2lnbmVk".into()),
            redacted: vec!["cmVkYWN0ZWQ=".into()],
        };
        memo.remember("a", &["call_1".into()], signed.clone());
        memo.remember("a", &["call_2".into()], signed);
        let echo = |text: &str, id: &str| {
            vec![
                Item::Reasoning(Reasoning {
                    text: text.into(),
                    ..Reasoning::default()
                }),
                call(id),
            ]
        };
        let mut same = echo("I will run ls.", "call_1");
        memo.recover("a", &mut same);
        let Item::Reasoning(r) = &same[0] else {
            panic!("the reasoning stays first: {same:?}")
        };
        assert_eq!(r.signature.as_deref(), Some("c2lnbmVk"));
        assert_eq!(r.redacted, ["cmVkYWN0ZWQ="]);
        assert_eq!(same.len(), 2, "completed in place, not added");
        // Text the server did not sign gets no signature (it would no longer match).
        let mut edited = echo("I will run ls -la.", "call_2");
        memo.recover("a", &mut edited);
        let Item::Reasoning(r) = &edited[0] else {
            panic!("the reasoning stays first: {edited:?}")
        };
        assert_eq!((r.signature.as_deref(), r.redacted.len()), (None, 0));
        // Another caller's echo of the same call id finds nothing.
        let mut theirs = echo("I will run ls.", "call_1");
        memo.recover("b", &mut theirs);
        let Item::Reasoning(r) = &theirs[0] else {
            panic!("the reasoning stays first: {theirs:?}")
        };
        assert_eq!(r.signature, None);
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
        let room = Usage::of_answer(10, 1);
        let bounds = Bounds {
            caller: room,
            total: room,
        };
        let memo = ReasoningMemo::with_bounds(bounds, None);
        memo.remember("a", &["one".into()], "123456");
        memo.remember("a", &["two".into()], "abcdef");
        let mut items = vec![call("one"), Item::ToolResult(result("one")), call("two")];
        memo.recover("a", &mut items);
        assert_eq!(reasoning_of(&items), [(2, "abcdef".to_owned())]);
    }

    /// A full memo drops its oldest and says so, by the bound that was full. (A recorder of
    /// this test's own, on this thread.)
    #[test]
    fn what_a_full_memo_drops_is_counted() {
        let answer = Usage::of_answer(2, 1);
        let bounds = Bounds {
            caller: answer,
            total: Usage {
                bytes: 2 * answer.bytes,
                rows: 2 * answer.rows,
            },
        };
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let memo = ReasoningMemo::with_bounds(bounds, None);
            memo.remember("alice", &["a1".into()], "a1");
            memo.remember("alice", &["a2".into()], "a2");
            memo.remember("bob", &["b1".into()], "b1");
            memo.remember("carol", &["c1".into()], "c1");
        });
        let text = handle.render();
        for (bound, count) in [("caller", 1), ("total", 1)] {
            let series = format!(
                "harness_proxy_reasoning_memo_evicted_total{{memo=\"local\",bound=\"{bound}\"}} {count}"
            );
            assert!(text.contains(&series), "{series}\n{text}");
        }
    }

    /// A store that fails every write and never answers a read.
    struct Broken;

    #[async_trait::async_trait]
    impl SharedMemo for Broken {
        async fn put(&self, _: Entry<'_>, _: Duration) -> Result<Evicted, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
        async fn get(&self, _: &str, _: &[String]) -> Result<Vec<Option<Thought>>, StoreError> {
            std::future::pending().await
        }
        async fn prune(&self) -> Result<u64, StoreError> {
            Err(StoreError::Unavailable("down".into()))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_or_silent_store_means_nothing_found_after_the_read_timeout() {
        let memo = ReasoningMemo::new(Some(Arc::new(Broken)));
        memo.remember("a", &["mine".into()], "kept here");
        memo.settled().await;
        let mut items = vec![
            call("mine"),
            Item::ToolResult(result("mine")),
            call("theirs"),
        ];
        let misses = memo.recover("a", &mut items);
        assert_eq!(reasoning_of(&items), [(0, "kept here".to_owned())]);
        let asked = tokio::time::Instant::now();
        memo.recover_shared("a", &mut items, misses).await;
        assert_eq!(asked.elapsed(), READ_TIMEOUT);
        assert_eq!(reasoning_of(&items), [(0, "kept here".to_owned())]);
        assert!(memo.prune().await.is_err(), "upkeep logs it; nothing else");
    }

    fn result(id: &str) -> crate::conversation::ToolResult {
        crate::conversation::ToolResult {
            call_id: Some(id.to_owned()),
            content: crate::conversation::Content::Text("ok".to_owned()),
            is_error: false,
        }
    }
}
