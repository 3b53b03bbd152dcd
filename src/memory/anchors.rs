//! Conversations of clients that send no conversation id (aider, `llm`, scripts).
//!
//! The first user text alone cannot tell two sessions apart (two that start with the same words
//! would share an id), but the proxy sees every answer it gives. So a turn that continues no
//! exchange the proxy knows starts a new conversation with a fresh id, and once its answer has
//! ended the exchange (that turn's user text and the answer) is remembered as the conversation's
//! anchor. Every later turn carries that exchange in its history and finds the id again; few-shot
//! answers the client wrote itself (aider) are never anchors, so they are skipped over.
//!
//! In memory and bounded: the oldest anchors go first. After a restart (or an eviction) an
//! ongoing conversation is not found and starts a new one on its next turn.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::memory::facts::ExchangeDigest;

/// Anchors kept; one per id-less conversation (about 100 bytes each).
pub const CAPACITY: usize = 100_000;

type Key = [u8; 32];

pub struct Anchors {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    ids: HashMap<Key, String>,
    /// Insertion order, for eviction.
    order: VecDeque<Key>,
}

impl Default for Anchors {
    fn default() -> Self {
        Self::new(CAPACITY)
    }
}

impl Anchors {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The conversation of the first of `exchanges` (oldest first) that is an anchor of `owner`.
    pub fn find(&self, owner: &str, exchanges: &[ExchangeDigest]) -> Option<String> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        exchanges
            .iter()
            .find_map(|exchange| inner.ids.get(&key(owner, exchange)).cloned())
    }

    /// Remembers `exchange` as the anchor of `conversation`.
    pub fn remember(&self, owner: &str, exchange: &ExchangeDigest, conversation: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let key = key(owner, exchange);
        if inner.ids.insert(key, conversation.to_owned()).is_none() {
            inner.order.push_back(key);
        }
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.ids.remove(&oldest);
            }
        }
    }
}

/// Anchors are per caller: another credential never continues someone else's conversation.
fn key(owner: &str, exchange: &ExchangeDigest) -> Key {
    let mut hasher = Sha256::new();
    hasher.update(owner.as_bytes());
    hasher.update(b"\0");
    hasher.update(exchange);
    hasher.finalize().into()
}

/// A new conversation id, `conv_<16 hex>` like the derived ones, from 64 random bits.
pub fn fresh_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(16);
    format!("conv_{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_found_per_owner_oldest_exchange_first() {
        let anchors = Anchors::new(10);
        let few_shot = [1u8; 32];
        let first = [2u8; 32];
        let later = [3u8; 32];
        anchors.remember("a", &first, "conv_one");
        anchors.remember("a", &later, "conv_other");
        assert_eq!(
            anchors.find("a", &[few_shot, first, later]).as_deref(),
            Some("conv_one")
        );
        assert_eq!(anchors.find("b", &[first]), None);
        assert_eq!(anchors.find("a", &[few_shot]), None);
    }

    #[test]
    fn the_oldest_anchor_goes_first() {
        let anchors = Anchors::new(2);
        for i in 0..3u8 {
            anchors.remember("a", &[i; 32], &format!("conv_{i}"));
        }
        assert_eq!(anchors.find("a", &[[0; 32]]), None);
        assert_eq!(anchors.find("a", &[[2; 32]]).as_deref(), Some("conv_2"));
    }

    #[test]
    fn fresh_ids_look_like_derived_ones_and_differ() {
        let (a, b) = (fresh_id(), fresh_id());
        assert_ne!(a, b);
        assert!(a.starts_with("conv_") && a.len() == 21, "{a}");
    }
}
