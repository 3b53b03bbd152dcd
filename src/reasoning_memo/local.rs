//! The process-local memo: (caller, call id) fingerprints to what is known of that call's
//! answer, bounded in bytes, oldest forgotten first. A hit here costs no store round trip.
//!
//! Owns: the map and its bound. Must not: grow past `max_bytes`, be keyed so that its keys can
//! be aimed at from outside (the seed is per process).

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

/// What a "nothing to find" entry counts against the byte bound: its key and bookkeeping.
const NEGATIVE_COST: usize = 64;

/// What the memo knows of one call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Known {
    /// The reasoning of the answer that made the call.
    Reasoning(Arc<str>),
    /// Nothing anywhere: the answer had no reasoning, or the shared store had none for an
    /// older turn. Asking the store again would only cost a round trip.
    Nothing,
}

impl Known {
    fn cost(&self) -> usize {
        match self {
            Self::Reasoning(text) => text.len(),
            Self::Nothing => NEGATIVE_COST,
        }
    }
}

pub(super) struct Local {
    inner: Mutex<Inner>,
    /// A per-process seed, so that fingerprints cannot be aimed at from outside.
    hasher: std::collections::hash_map::RandomState,
    max_bytes: usize,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<u64, Known>,
    /// Insertion order with each entry's key, for forgetting the oldest.
    order: VecDeque<u64>,
    bytes: usize,
}

impl Local {
    pub(super) fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            hasher: std::collections::hash_map::RandomState::new(),
            max_bytes,
        }
    }

    fn fingerprint(&self, owner: &str, call_id: &str) -> u64 {
        self.hasher.hash_one((owner, call_id))
    }

    /// Records `known` for each of `call_ids`, then forgets the oldest past the bound.
    pub(super) fn insert<'a>(
        &self,
        owner: &str,
        call_ids: impl IntoIterator<Item = &'a str>,
        known: &Known,
    ) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        for id in call_ids {
            let key = self.fingerprint(owner, id);
            if let Some(old) = inner.entries.insert(key, known.clone()) {
                inner.bytes -= old.cost();
            } else {
                inner.order.push_back(key);
            }
            inner.bytes += known.cost();
        }
        while inner.bytes > self.max_bytes {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(old) = inner.entries.remove(&oldest) {
                inner.bytes -= old.cost();
            }
        }
    }

    pub(super) fn get(&self, owner: &str, call_id: &str) -> Option<Known> {
        let key = self.fingerprint(owner, call_id);
        self.inner.lock().ok()?.entries.get(&key).cloned()
    }
}
