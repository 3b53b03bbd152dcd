//! The memo's entries in the title store's backend, so that a turn answered by one replica and
//! continued on another gets its reasoning back. `SharedMemo` is what a backend offers (SQLite:
//! a table in the same file, `sqlite`; Redis: keys under `titles.redis_prefix`, `redis`); the
//! memory backend has none (the local map is all there is). `Shared` is how the memo uses it:
//! writes on a tracked task off the request path, at most `MAX_PENDING_WRITES` at once; reads
//! bounded by `READ_TIMEOUT`. Any failure is counted and logged and means "nothing found".
//!
//! Keys are the same on every replica and scoped per caller: hex SHA-256 over the owner (already
//! a caller-identity hash), a separator and the call id.
//!
//! Owns: the trait, the keys, the write tasks and their bound. Must not: be awaited by an
//! answer, fail a request, or keep an entry past `SHARED_TTL`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

use crate::config::{StoreUrl, TitlesConfig};
use crate::titles::store::StoreError;

/// How long another replica can find an answer's reasoning: a tool loop's next turn comes
/// within minutes; a session resumed a day later sends its history to whichever replica.
pub const SHARED_TTL: Duration = Duration::from_secs(24 * 3600);
/// A turn waits at most this long for the shared store (then goes on as if nothing was found).
pub const READ_TIMEOUT: Duration = Duration::from_millis(250);
/// A write gives up after this long (a hung store must not pile up tasks).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Writes in flight at once; beyond it a write is dropped (and counted), never queued.
const MAX_PENDING_WRITES: usize = 256;

/// The memo's side of a store backend: texts under keys, expiring.
#[async_trait]
pub trait SharedMemo: Send + Sync {
    /// Stores `text` under every key, each for `ttl` from now (replacing what was there).
    async fn put(&self, keys: &[String], text: &str, ttl: Duration) -> Result<(), StoreError>;
    /// The unexpired text under each key, in the keys' order.
    async fn get(&self, keys: &[String]) -> Result<Vec<Option<String>>, StoreError>;
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

/// Opens the memo's side of the store `titles.store` names; `None` for `memory`.
pub fn open(config: &TitlesConfig) -> Result<Option<Arc<dyn SharedMemo>>, StoreError> {
    Ok(match &config.store {
        StoreUrl::Memory => None,
        StoreUrl::Sqlite(path) => Some(Arc::new(super::sqlite::SqliteMemo::open(path)?)),
        StoreUrl::Redis(url) => Some(Arc::new(super::redis::RedisMemo::open(
            url,
            &config.redis_prefix,
        )?)),
    })
}

/// A shared store as the memo uses it.
pub(super) struct Shared {
    pub(super) store: Arc<dyn SharedMemo>,
    /// Writes in flight, so that shutdown (and a test) can wait for them.
    tracker: TaskTracker,
    /// Bounds the writes in flight.
    writes: Arc<Semaphore>,
}

impl Shared {
    pub(super) fn new(store: Arc<dyn SharedMemo>) -> Self {
        Self {
            store,
            tracker: TaskTracker::new(),
            writes: Arc::new(Semaphore::new(MAX_PENDING_WRITES)),
        }
    }

    /// Starts writing `text` under `keys`; returns at once.
    pub(super) fn write(&self, keys: Vec<String>, text: Arc<str>) {
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
                let put = store.put(&keys, &text, SHARED_TTL);
                match tokio::time::timeout(WRITE_TIMEOUT, put).await {
                    Ok(Ok(())) => counted("write", "stored"),
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

    /// The texts under `keys`, or `None` when the store failed or was too slow.
    pub(super) async fn read(&self, keys: &[String]) -> Option<Vec<Option<String>>> {
        match tokio::time::timeout(READ_TIMEOUT, self.store.get(keys)).await {
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
