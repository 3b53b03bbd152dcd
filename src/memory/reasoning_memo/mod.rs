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
//! `memory::answer_witness` feeds it and `routes::inbound` reads it.
//!
//! Two levels: the process-local map (`local`; a hit costs no round trip), and, beside it, the
//! shared store backend (`shared`: tables in the SQLite file, keys with a TTL in Redis; nothing
//! for `memory`), so a turn answered by one replica and continued on another finds it too.
//! Writes to the store go on a tracked task, never awaited by the answer; a turn reads the store
//! only for the turns the local map does not know (`recover` names them, `recover_shared` looks
//! them up, within `titles.memo_read_timeout`), and a failure or a timeout there means "nothing
//! found".
//!
//! Both levels enforce their bounds as they write (`Bounds`: bytes and rows, per caller and in
//! total; an answer counts its reasoning once and `REF_BYTES` per call id): past one, the oldest
//! entries go, counted in `harness_proxy_reasoning_memo_evicted_total`.
//!
//! Owns: what is remembered, where, and its bounds (one answer at most `MAX_ENTRY_BYTES` and
//! `MAX_CALLS_PER_ANSWER` calls; the local map `LOCAL_BOUNDS`; the store `SHARED_TTL` and
//! `STORE_BOUNDS`). Must not: override reasoning a client did echo, fail or hold up a request,
//! or keep an entry past its bounds.

mod bounds;
#[cfg(test)]
mod contract;
#[cfg(test)]
mod contract_signed;
mod local;
mod redis;
pub mod shared;
pub mod sqlite;
mod thought;
mod turns;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::conversation::Item;
use crate::store::{Backend, StoreError};
pub use bounds::{Bounds, Evicted, Usage};
use local::{Known, Local};
pub use shared::{Entry, READ_TIMEOUT, SHARED_TTL, SharedMemo};
use shared::{Shared, key};
pub use thought::Thought;
pub use turns::Echoed;
use turns::fill_bare_turns;

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

pub struct ReasoningMemo {
    local: Local,
    /// The shared store backend, when other processes can read it.
    shared: Option<Shared>,
}

/// The call ids of turns the local map knew nothing of, oldest turn first: what to ask the
/// shared store for (empty without one), and what to do with echoed turns it finds.
#[derive(Debug, Default)]
pub struct Misses(Vec<String>, Echoed);

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
    /// its first call (and a turn that echoed the text alone its signature, when `echoed` says
    /// so); returns the turns it knows nothing of, for `recover_shared`.
    pub fn recover(&self, owner: &str, items: &mut Vec<Item>, echoed: Echoed) -> Misses {
        let mut misses = Vec::new();
        fill_bare_turns(items, echoed, |id| match self.local.get(owner, id) {
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
        Misses(misses, echoed)
    }

    /// Looks `misses` up in the shared store (within the read timeout) and fills the turns found;
    /// what is found is kept here too. Absent ones are noted as such, except the newest turn's,
    /// whose answer's write may still be on its way from another replica.
    pub async fn recover_shared(&self, owner: &str, items: &mut Vec<Item>, misses: Misses) {
        let (Some(shared), Misses(ids, echoed)) = (&self.shared, misses) else {
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
        fill_bare_turns(items, echoed, |id| thoughts.get(id).cloned());
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

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
