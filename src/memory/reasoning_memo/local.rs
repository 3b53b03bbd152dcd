//! The process-local memo: one entry per answer (its reasoning once, and the fingerprints of its
//! call ids, each a reference to the entry), bounded in bytes and rows per caller and in total
//! at every insert, oldest entry forgotten first and counted. A hit here costs no store round
//! trip.
//!
//! Owns: the map and its bounds. Must not: grow past its bounds, hold an answer's reasoning once
//! per call, be keyed so that its keys can be aimed at from outside (the seed is per process).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};

use super::{Bounds, Evicted, Thought, Usage};

/// What a "nothing to find" entry counts against the byte bound, besides its references.
const NEGATIVE_COST: u64 = 64;

/// What the memo knows of one call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Known {
    /// The reasoning of the answer that made the call (its text, signature, redacted thinking).
    Reasoning(Arc<Thought>),
    /// Nothing anywhere: the answer had no reasoning, or the shared store had none for an
    /// older turn. Asking the store again would only cost a round trip.
    Nothing,
}

/// One answer (or one "nothing" note) and the calls that refer to it.
struct Stored {
    owner: u64,
    known: Known,
    /// The fingerprints of its calls, to unlink them when it goes.
    calls: Vec<u64>,
    usage: Usage,
}

pub(super) struct Local {
    inner: Mutex<Inner>,
    /// A per-process seed, so that fingerprints cannot be aimed at from outside.
    hasher: std::collections::hash_map::RandomState,
    bounds: Bounds,
}

#[derive(Default)]
struct Inner {
    /// By insertion number: the first is the oldest.
    entries: BTreeMap<u64, Stored>,
    /// (caller, call id) fingerprint → the entry it refers to.
    calls: HashMap<u64, u64>,
    /// Each caller's entries, oldest first, and what they count.
    owners: HashMap<u64, (VecDeque<u64>, Usage)>,
    total: Usage,
    next: u64,
}

impl Local {
    pub(super) fn new(bounds: Bounds) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            hasher: std::collections::hash_map::RandomState::new(),
            bounds,
        }
    }

    fn fingerprint(&self, owner: &str, call_id: &str) -> u64 {
        self.hasher.hash_one((owner, call_id))
    }

    /// Records `known` once for all of `call_ids`, then forgets the oldest entries past the
    /// caller's bounds and past the total's; says how many went. An entry larger than a
    /// caller's bounds is not kept.
    pub(super) fn insert<'a>(
        &self,
        owner: &str,
        call_ids: impl IntoIterator<Item = &'a str>,
        known: Known,
    ) -> Evicted {
        let calls: Vec<u64> = call_ids
            .into_iter()
            .map(|id| self.fingerprint(owner, id))
            .collect();
        let refs = calls.len() as u64;
        let usage = Usage {
            bytes: match &known {
                Known::Reasoning(thought) => thought.bytes() as u64,
                Known::Nothing => NEGATIVE_COST,
            } + refs * super::REF_BYTES,
            rows: 1 + refs,
        };
        let mut evicted = Evicted::default();
        if calls.is_empty() || !usage.within(self.bounds.caller) {
            return evicted;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let owner = self.hasher.hash_one(owner);
        let seq = inner.next;
        inner.next += 1;
        for &call in &calls {
            inner.calls.insert(call, seq);
        }
        let (queue, used) = inner.owners.entry(owner).or_default();
        queue.push_back(seq);
        *used = used.plus(usage);
        inner.total = inner.total.plus(usage);
        inner.entries.insert(
            seq,
            Stored {
                owner,
                known,
                calls,
                usage,
            },
        );
        while inner
            .owners
            .get(&owner)
            .is_some_and(|(_, used)| !used.within(self.bounds.caller))
        {
            let Some(oldest) = inner
                .owners
                .get(&owner)
                .and_then(|(q, _)| q.front().copied())
            else {
                break;
            };
            inner.forget(oldest);
            evicted.caller += 1;
        }
        while !inner.total.within(self.bounds.total) {
            let Some(oldest) = inner.entries.keys().next().copied() else {
                break;
            };
            inner.forget(oldest);
            evicted.total += 1;
        }
        evicted
    }

    pub(super) fn get(&self, owner: &str, call_id: &str) -> Option<Known> {
        let key = self.fingerprint(owner, call_id);
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = inner.calls.get(&key)?;
        inner.entries.get(seq).map(|stored| stored.known.clone())
    }

    /// What the map counts against its bounds now.
    pub(super) fn usage(&self) -> Usage {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

impl Inner {
    /// Drops entry `seq` (its owner's oldest: entries go in insertion order) and the calls that
    /// still refer to it.
    fn forget(&mut self, seq: u64) {
        let Some(stored) = self.entries.remove(&seq) else {
            return;
        };
        for call in &stored.calls {
            if self.calls.get(call) == Some(&seq) {
                self.calls.remove(call);
            }
        }
        if let Some((queue, used)) = self.owners.get_mut(&stored.owner) {
            if queue.front() == Some(&seq) {
                queue.pop_front();
            } else {
                queue.retain(|&s| s != seq);
            }
            *used = used.minus(stored.usage);
            if queue.is_empty() {
                self.owners.remove(&stored.owner);
            }
        }
        self.total = self.total.minus(stored.usage);
    }
}
