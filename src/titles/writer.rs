//! Title outcomes on their way to the store, written in batches off every request's path.
//!
//! Each finished title used to be one store write of its own (on SQLite one transaction on the
//! blocking pool). A client that sends no conversation id starts a conversation, and so finishes
//! a title record, on every first turn, so on a busy proxy those writes were most of what titles
//! cost. Outcomes are now queued here and written together once they have gathered for
//! `LINGER` (one `TitleStore::finish_many`). Until its batch is written a record stays in the
//! live registry with its outcome, so `/titles/{id}` and its stream already show it, and
//! `/titles` writes the queue before it lists, so a listing never misses a finished title.
//!
//! Owns: the queue (bounded: past `CAPACITY` a title's outcome is written on its own, as before,
//! so nothing is dropped) and the one drain task that runs while it is not empty. Must not: hold
//! an outcome the store refused (it goes to the outbox, as a single write's would), or keep a task
//! alive when nothing is queued (shutdown waits for the service's tasks).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::store::TitleRecord;

/// How long a batch gathers before it is written: at most this much later than one write per
/// outcome, and the longest a crash can lose a finished title that the live registry showed.
pub const LINGER: Duration = Duration::from_millis(50);
/// Outcomes queued at most (a few MiB); beyond, each is written on its own.
pub const CAPACITY: usize = 10_000;

#[derive(Default)]
pub struct OutcomeQueue {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    queued: Vec<TitleRecord>,
    /// A drain task is running (it takes the queue until it finds it empty).
    draining: bool,
}

/// What `push` asks of its caller.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued; a drain task already runs.
    Queued,
    /// Queued, and no drain task runs: the caller starts one.
    StartDrain,
    /// The queue is full (or broken): the caller writes this record itself.
    WriteNow(Box<TitleRecord>),
}

impl OutcomeQueue {
    pub fn push(&self, record: TitleRecord) -> Pushed {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.queued.len() >= CAPACITY {
            return Pushed::WriteNow(Box::new(record));
        }
        inner.queued.push(record);
        if std::mem::replace(&mut inner.draining, true) {
            Pushed::Queued
        } else {
            Pushed::StartDrain
        }
    }

    /// Takes everything queued. For the drain task (`ends_drain`): an empty queue ends it, so the
    /// next push starts another.
    pub fn take(&self, ends_drain: bool) -> Vec<TitleRecord> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if ends_drain && inner.queued.is_empty() {
            inner.draining = false;
        }
        std::mem::take(&mut inner.queued)
    }

    pub fn is_empty(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .queued
            .is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::titles::store::contract::record;

    #[test]
    fn the_first_push_starts_a_drain_and_an_empty_take_ends_it() {
        let queue = OutcomeQueue::default();
        assert_eq!(queue.push(record("o", "a", 0)), Pushed::StartDrain);
        assert_eq!(queue.push(record("o", "b", 0)), Pushed::Queued);
        assert_eq!(queue.take(true).len(), 2);
        assert_eq!(
            queue.push(record("o", "c", 0)),
            Pushed::Queued,
            "still draining"
        );
        assert_eq!(queue.take(true).len(), 1);
        assert!(queue.take(true).is_empty());
        assert_eq!(queue.push(record("o", "d", 0)), Pushed::StartDrain);
    }

    #[test]
    fn a_full_queue_hands_the_record_back_instead_of_dropping_it() {
        let queue = OutcomeQueue::default();
        for i in 0..CAPACITY {
            assert_ne!(
                queue.push(record("o", &format!("r{i}"), 0)),
                Pushed::WriteNow(Box::new(record("o", "x", 0)))
            );
        }
        assert!(
            matches!(queue.push(record("o", "last", 0)), Pushed::WriteNow(r) if r.id == "last")
        );
    }
}
