//! Titles this process generated lately, by what they were generated from (caller, model, the
//! text titled). A conversation an id-less client starts with the same words as one before it
//! (a retried first turn, a script's loop, a second `llm` run of the same question) would get the
//! same title from the same request, so it gets that title without a second title request: the
//! product's rule that a retried first turn is not titled twice, for clients whose retry cannot be
//! told from a new session.
//!
//! Owns: a bounded map of (caller, model, text) fingerprints to sanitized titles, oldest forgotten
//! first. Must not: decide which turns are titled (`turn`), or be asked for conversations a client
//! named (their retry carries the same id, and the store's claim already refuses it).

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Mutex, PoisonError};

/// Titles remembered: about 100 bytes each (a fingerprint and at most `titles.max_chars`).
pub const CAPACITY: usize = 16_384;

pub struct RecentTitles {
    inner: Mutex<Inner>,
    /// A per-process seed, so that fingerprints cannot be aimed at from outside.
    hasher: std::collections::hash_map::RandomState,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    titles: HashMap<u64, String>,
    /// Insertion order, for forgetting the oldest.
    order: VecDeque<u64>,
}

impl Default for RecentTitles {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

/// What a title was generated from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub owner: &'a str,
    pub model: &'a str,
    pub text: &'a str,
}

impl RecentTitles {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            hasher: std::collections::hash_map::RandomState::new(),
            capacity: capacity.max(1),
        }
    }

    /// A 64-bit fingerprint: a collision (one in 2^64 per pair) gives one conversation the title
    /// of another of the same caller.
    fn fingerprint(&self, source: Source<'_>) -> u64 {
        self.hasher
            .hash_one((source.owner, source.model, source.text))
    }

    pub fn get(&self, source: Source<'_>) -> Option<String> {
        let key = self.fingerprint(source);
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .titles
            .get(&key)
            .cloned()
    }

    pub fn remember(&self, source: Source<'_>, title: &str) {
        let key = self.fingerprint(source);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.titles.insert(key, title.to_owned()).is_none() {
            inner.order.push_back(key);
        }
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.titles.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source<'a>(owner: &'a str, text: &'a str) -> Source<'a> {
        Source {
            owner,
            model: "m",
            text,
        }
    }

    #[test]
    fn a_title_is_found_by_what_it_was_made_from_and_per_caller() {
        let recent = RecentTitles::default();
        recent.remember(source("a", "fix the login bug"), "Login bug fix");
        assert_eq!(
            recent.get(source("a", "fix the login bug")).as_deref(),
            Some("Login bug fix")
        );
        assert_eq!(recent.get(source("b", "fix the login bug")), None);
        assert_eq!(recent.get(source("a", "fix the logout bug")), None);
        let other_model = Source {
            model: "n",
            ..source("a", "fix the login bug")
        };
        assert_eq!(recent.get(other_model), None);
    }

    #[test]
    fn the_oldest_title_is_forgotten_first() {
        let recent = RecentTitles::with_capacity(2);
        for text in ["one", "two", "three"] {
            recent.remember(source("a", text), text);
        }
        assert_eq!(recent.get(source("a", "one")), None);
        assert_eq!(recent.get(source("a", "three")).as_deref(), Some("three"));
    }
}
