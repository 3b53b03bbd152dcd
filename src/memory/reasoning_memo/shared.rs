//! The memo's entries in the shared store backend (`store`), so that a turn answered by one replica and
//! continued on another gets its reasoning back. `SharedMemo` is what a backend offers (SQLite:
//! a table in the same file, `sqlite`; Redis: keys under `titles.redis_prefix`, `redis`); the
//! memory backend has none (the local map is all there is). `Shared` is how the memo uses it:
//! writes on a tracked task off the request path, at most `MAX_PENDING_WRITES` at once; reads
//! bounded by `READ_TIMEOUT`. Any failure is counted and logged and means "nothing found".
//!
//! An answer is one entry: its reasoning once (text, the server's signature, its redacted
//! thinking: `Thought`, every byte of it counted), its owner (for the per-caller bound) and its
//! calls' keys, each a reference to it; a backend keeps `STORE_BOUNDS` as it writes, dropping
//! its oldest entries (the caller's, then everyone's) and saying how many (`Evicted`). Keys are
//! the same on every replica and scoped per caller: hex SHA-256 over the owner (already a
//! caller-identity hash), a separator and the call id.
//!
//! Owns: the trait, the keys, the write tasks and their bound (which backend serves it is
//! `ReasoningMemo::open`'s choice, in the folder's `mod`, above the backends). Must not: be awaited by an
//! answer, fail a request, or keep an entry past `SHARED_TTL` or its backend's bounds.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

use super::{Evicted, Thought};
use crate::store::StoreError;

/// How long another replica can find an answer's reasoning: a tool loop's next turn comes
/// within minutes; a session resumed a day later sends its history to whichever replica.
pub const SHARED_TTL: Duration = Duration::from_secs(24 * 3600);
/// A turn waits at most this long for the shared store (then goes on as if nothing was found),
/// unless `titles.memo_read_timeout` says otherwise.
pub const READ_TIMEOUT: Duration = Duration::from_millis(250);
/// A write gives up after this long (a hung store must not pile up tasks).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Writes in flight at once; beyond it a write is dropped (and counted), never queued.
const MAX_PENDING_WRITES: usize = 256;

/// One answer as a backend stores it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The caller whose answer it is (its bound).
    pub owner: &'a str,
    /// The keys (`key`) of its calls, each to refer to `thought`.
    pub calls: &'a [String],
    pub thought: &'a Thought,
}

/// The memo's side of a store backend: answers' reasoning under their calls' keys, expiring,
/// within its bounds.
#[async_trait]
pub trait SharedMemo: Send + Sync {
    /// Stores the entry's reasoning once, for `ttl` from now, and each of its calls' keys as a
    /// reference to it (a key already there now refers to this one); then drops expired
    /// entries, and the oldest past the caller's and the total bounds. An entry larger than
    /// a caller's bound is not stored.
    async fn put(&self, entry: Entry<'_>, ttl: Duration) -> Result<Evicted, StoreError>;
    /// The unexpired reasoning each of `owner`'s keys refers to, in the keys' order.
    async fn get(&self, owner: &str, keys: &[String]) -> Result<Vec<Option<Thought>>, StoreError>;
    /// Drops expired entries and the oldest past the backend's bounds; how many went.
    async fn prune(&self) -> Result<u64, StoreError>;
}

/// The key of (owner, call id) in a shared store.
pub fn key(owner: &str, call_id: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(owner.as_bytes());
    hash.update([0x1f]);
    hash.update(call_id.as_bytes());
    hex::encode(hash.finalize())
}

/// A shared store as the memo uses it.
pub(super) struct Shared {
    pub(super) store: Arc<dyn SharedMemo>,
    /// Writes in flight, so that shutdown (and a test) can wait for them.
    tracker: TaskTracker,
    /// Bounds the writes in flight.
    writes: Arc<Semaphore>,
    /// How long a turn waits for a read.
    read_timeout: Duration,
}

impl Shared {
    pub(super) fn new(store: Arc<dyn SharedMemo>) -> Self {
        Self {
            store,
            tracker: TaskTracker::new(),
            writes: Arc::new(Semaphore::new(MAX_PENDING_WRITES)),
            read_timeout: READ_TIMEOUT,
        }
    }

    pub(super) fn read_within(&mut self, timeout: Duration) {
        self.read_timeout = timeout;
    }

    /// Starts writing `thought` once, `keys` referring to it; returns at once.
    pub(super) fn write(&self, owner: String, keys: Vec<String>, thought: Arc<Thought>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // an answer dropped outside the runtime: nothing to write with
        };
        let Ok(permit) = self.writes.clone().try_acquire_owned() else {
            counted("write", "dropped");
            tracing::debug!("reasoning memo: too many writes in flight; one dropped");
            return;
        };
        let store = self.store.clone();
        self.tracker.spawn_on(
            async move {
                let _permit = permit;
                let entry = Entry {
                    owner: &owner,
                    calls: &keys,
                    thought: &thought,
                };
                match tokio::time::timeout(WRITE_TIMEOUT, store.put(entry, SHARED_TTL)).await {
                    Ok(Ok(evicted)) => {
                        counted("write", "stored");
                        evicted.count("store");
                    }
                    Ok(Err(err)) => {
                        counted("write", "error");
                        tracing::warn!(error = %err, "reasoning memo: cannot write to the store");
                    }
                    Err(_) => {
                        counted("write", "timeout");
                        tracing::warn!("reasoning memo: the store did not take a write in time");
                    }
                }
            },
            &runtime,
        );
    }

    /// The reasoning under `keys`, or `None` when the store failed or took longer than the read
    /// timeout.
    pub(super) async fn read(&self, owner: &str, keys: &[String]) -> Option<Vec<Option<Thought>>> {
        match tokio::time::timeout(self.read_timeout, self.store.get(owner, keys)).await {
            Ok(Ok(found)) => {
                let hits = found.iter().filter(|f| f.is_some()).count();
                metrics::counter!("harness_proxy_reasoning_memo_store_total", "operation" => "read", "outcome" => "found")
                    .increment(hits as u64);
                metrics::counter!("harness_proxy_reasoning_memo_store_total", "operation" => "read", "outcome" => "absent")
                    .increment((found.len() - hits) as u64);
                Some(found)
            }
            Ok(Err(err)) => {
                counted("read", "error");
                tracing::debug!(error = %err, "reasoning memo: cannot read the store");
                None
            }
            Err(_) => {
                counted("read", "timeout");
                tracing::debug!("reasoning memo: the store did not answer in time");
                None
            }
        }
    }

    /// Waits until the writes started so far have ended.
    pub(super) async fn settled(&self) {
        self.tracker.close();
        self.tracker.wait().await;
        self.tracker.reopen();
    }

    /// Waits up to `within` for writes in flight (shutdown).
    pub(super) async fn drain(&self, within: Duration) {
        self.tracker.close();
        if tokio::time::timeout(within, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("reasoning memo: writes still running at shutdown were given up");
        }
    }
}

fn counted(operation: &'static str, outcome: &'static str) {
    metrics::counter!("harness_proxy_reasoning_memo_store_total", "operation" => operation, "outcome" => outcome)
        .increment(1);
}
