//! Conversations this process knows already have a title record: it claimed them, or its claim
//! found one. A later turn that looks like a first one (an id-less client's repeated opening, a
//! single-turn SDK script) is then not claimed again, so it costs no store round trip.
//!
//! Owns: a bounded set of (owner, id) fingerprints, oldest forgotten first. Must not: decide a
//! claim (the store does; a forgotten or unknown conversation is simply claimed as before).

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// How many conversations are remembered: 16 bytes each, so about 1.5 MiB at most.
pub const CAPACITY: usize = 65_536;

pub struct Known {
    inner: Mutex<Inner>,
    /// A per-process seed, so that fingerprints cannot be aimed at from outside.
    hasher: std::collections::hash_map::RandomState,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    set: HashSet<u64>,
    /// Insertion order, for forgetting the oldest.
    order: VecDeque<u64>,
}

impl Default for Known {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Known {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            hasher: std::collections::hash_map::RandomState::new(),
            capacity: capacity.max(1),
        }
    }

    /// A 64-bit fingerprint: a collision (one in 2^64 per pair) only skips one claim.
    fn fingerprint(&self, owner: &str, id: &str) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        owner.hash(&mut hasher);
        id.hash(&mut hasher);
        hasher.finish()
    }

    pub fn contains(&self, owner: &str, id: &str) -> bool {
        let key = self.fingerprint(owner, id);
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set
            .contains(&key)
    }

    pub fn insert(&self, owner: &str, id: &str) {
        let key = self.fingerprint(owner, id);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if !inner.set.insert(key) {
            return;
        }
        inner.order.push_back(key);
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.set.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Known;

    #[test]
    fn remembers_up_to_its_capacity_and_forgets_the_oldest_first() {
        let known = Known::with_capacity(2);
        assert!(!known.contains("o", "a"));
        known.insert("o", "a");
        known.insert("o", "b");
        assert!(known.contains("o", "a") && known.contains("o", "b"));
        assert!(!known.contains("p", "a"), "scoped by owner");
        known.insert("o", "c");
        assert!(!known.contains("o", "a"), "the oldest is forgotten");
        assert!(known.contains("o", "b") && known.contains("o", "c"));
    }
}
