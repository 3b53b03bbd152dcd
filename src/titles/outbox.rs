//! Title outcomes the store could not take (Redis down, disk trouble), held in a bounded queue in
//! this process and written, oldest first, once the store answers again. Beyond the bound the
//! oldest outcome is dropped and counted: chat never waits and memory stays bounded.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use super::store::{TitleRecord, TitleStore};

/// Outcomes held at most; each is a small record, so this bounds the queue to a few MiB.
pub const CAPACITY: usize = 10_000;

pub struct Outbox {
    queue: Mutex<VecDeque<TitleRecord>>,
    capacity: usize,
    /// One flush at a time (the maintenance loop and shutdown may both try).
    flushing: tokio::sync::Mutex<()>,
}

impl Default for Outbox {
    fn default() -> Self {
        Self::new(CAPACITY)
    }
}

impl Outbox {
    pub fn new(capacity: usize) -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            flushing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn push(&self, record: TitleRecord) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= self.capacity {
            queue.pop_front();
            metrics::counter!("harness_proxy_title_outbox_dropped_total").increment(1);
            tracing::warn!("title outbox full; dropped the oldest queued title outcome");
        }
        queue.push_back(record);
        gauge(queue.len());
    }

    pub fn len(&self) -> usize {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes queued outcomes in order until one fails; returns the records written (so their
    /// followers can be told).
    pub async fn flush(&self, store: &dyn TitleStore) -> Vec<TitleRecord> {
        let _one = self.flushing.lock().await;
        let mut written = Vec::new();
        loop {
            let next = self
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .front()
                .cloned();
            let Some(record) = next else { break };
            if let Err(err) = store.finish(&record).await {
                tracing::debug!(error = %err, queued = self.len(), "title store still unreachable");
                break;
            }
            {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                // A full queue may have dropped it meanwhile; never pop an unwritten one.
                if queue.front() == Some(&record) {
                    queue.pop_front();
                }
                gauge(queue.len());
            }
            written.push(record);
        }
        if !written.is_empty() {
            tracing::info!(count = written.len(), "wrote queued title outcomes");
        }
        written
    }
}

fn gauge(depth: usize) {
    metrics::gauge!("harness_proxy_title_outbox_depth").set(depth as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::titles::store::contract::record;
    use crate::titles::store::memory::MemoryStore;

    #[tokio::test]
    async fn keeps_the_newest_within_its_bound_and_writes_them_in_order() {
        let outbox = Outbox::new(2);
        for id in ["a", "b", "c"] {
            outbox.push(record("o", id, 1));
        }
        assert_eq!(outbox.len(), 2);
        let store = MemoryStore::new(10);
        let written: Vec<String> = outbox
            .flush(&store)
            .await
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(written, ["b", "c"]);
        assert!(outbox.is_empty());
        assert!(store.get(Some("o"), "c").await.expect("get").is_some());
    }
}
