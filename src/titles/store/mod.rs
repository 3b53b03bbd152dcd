//! `TitleStore`: where title records live. Backends: `memory` (bounded, for tests and ephemeral
//! use) and `sqlite` (embedded default, survives restarts). Records are keyed by (owner, id) so two
//! callers can never read or block each other's conversations.

pub mod memory;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Done,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "done" => Some(Self::Done),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One conversation's title. `owner` is the caller identity hash; it is never shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleRecord {
    pub owner: String,
    pub id: String,
    pub title: Option<String>,
    pub status: Status,
    pub error: Option<String>,
    pub model: String,
    pub harness: String,
    /// The client protocol of the request that started the conversation (`chat`, `responses`,
    /// `messages`).
    pub protocol: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Position in the newest-first listing: strictly older than (created_at, id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub created_at_micros: i64,
    pub id: String,
}

impl Cursor {
    pub fn of(record: &TitleRecord) -> Self {
        Self {
            created_at_micros: record.created_at.timestamp_micros(),
            id: record.id.clone(),
        }
    }

    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at_micros, self.id)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (micros, id) = text.split_once('.')?;
        Some(Self {
            created_at_micros: micros.parse().ok()?,
            id: id.to_owned(),
        })
    }

    /// Whether `record` comes after this cursor in newest-first order.
    pub fn is_before(&self, record: &TitleRecord) -> bool {
        let micros = record.created_at.timestamp_micros();
        micros < self.created_at_micros
            || (micros == self.created_at_micros && record.id.as_str() < self.id.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("title store: {0}")]
    Backend(String),
}

#[async_trait]
pub trait TitleStore: Send + Sync {
    /// Inserts a pending record unless one exists for (owner, id); returns whether it inserted.
    async fn insert_pending(&self, record: &TitleRecord) -> Result<bool, StoreError>;
    /// Writes the outcome of a title (status, title, error, updated_at) onto an existing record.
    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError>;
    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError>;
    /// Newest first; `owner: None` lists every caller's records (admin).
    async fn list(
        &self,
        owner: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError>;
    /// Deletes records older than `older_than` and all but the newest `keep` records.
    async fn prune(&self, older_than: DateTime<Utc>, keep: usize) -> Result<u64, StoreError>;
    /// Marks records left `pending` by an earlier process as failed.
    async fn fail_stale_pending(&self, reason: &str, now: DateTime<Utc>)
    -> Result<u64, StoreError>;
    /// Readiness probe.
    async fn ping(&self) -> Result<(), StoreError>;
}

/// Opens the store named by `titles.store`: `memory` or `sqlite://PATH`.
pub fn open(spec: &str, max_records: usize) -> Result<Arc<dyn TitleStore>, StoreError> {
    if spec == "memory" {
        return Ok(Arc::new(memory::MemoryStore::new(max_records)));
    }
    match spec.strip_prefix("sqlite://") {
        Some(path) => Ok(Arc::new(sqlite::SqliteStore::open(std::path::Path::new(
            path,
        ))?)),
        None => Err(StoreError::Backend(format!(
            "unknown store `{spec}`; expected `memory` or `sqlite://PATH`"
        ))),
    }
}

#[cfg(test)]
pub(crate) mod contract {
    //! The behaviour every backend must show; each backend's tests run it.

    use super::*;
    use chrono::TimeZone;

    pub fn record(owner: &str, id: &str, second: i64) -> TitleRecord {
        let at = Utc
            .timestamp_opt(1_700_000_000 + second, 0)
            .single()
            .expect("valid time");
        TitleRecord {
            owner: owner.into(),
            id: id.into(),
            title: None,
            status: Status::Pending,
            error: None,
            model: "m".into(),
            harness: "opencode".into(),
            protocol: "chat".into(),
            created_at: at,
            updated_at: at,
        }
    }

    pub async fn run(store: &dyn TitleStore) {
        assert!(
            store
                .insert_pending(&record("alice", "c1", 1))
                .await
                .expect("insert")
        );
        assert!(
            !store
                .insert_pending(&record("alice", "c1", 2))
                .await
                .expect("insert"),
            "no duplicate"
        );
        assert!(
            store
                .insert_pending(&record("bob", "c1", 3))
                .await
                .expect("insert"),
            "same id, other owner"
        );
        assert!(
            store
                .insert_pending(&record("alice", "c2", 4))
                .await
                .expect("insert")
        );
        assert!(
            store
                .insert_pending(&record("alice", "c3", 5))
                .await
                .expect("insert")
        );

        let mut done = record("alice", "c1", 1);
        done.status = Status::Done;
        done.title = Some("Retry backoff".into());
        done.updated_at = done.created_at + chrono::Duration::seconds(9);
        store.finish(&done).await.expect("finish");
        assert_eq!(
            store.get(Some("alice"), "c1").await.expect("get"),
            Some(done.clone())
        );
        assert_eq!(
            store.get(Some("carol"), "c1").await.expect("get"),
            None,
            "scoped by owner"
        );
        assert_eq!(
            store.get(None, "c1").await.expect("get").map(|r| r.owner),
            Some("bob".into()),
            "admin: newest"
        );

        let ids = |records: Vec<TitleRecord>| records.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.list(Some("alice"), None, 10).await.expect("list")),
            ["c3", "c2", "c1"]
        );
        let page = store.list(Some("alice"), None, 2).await.expect("list");
        let cursor = Cursor::of(&page[1]);
        assert_eq!(
            ids(store
                .list(Some("alice"), Some(&cursor), 10)
                .await
                .expect("list")),
            ["c1"]
        );
        assert_eq!(store.list(None, None, 10).await.expect("list").len(), 4);

        let stale = store
            .fail_stale_pending("restarted", done.created_at)
            .await
            .expect("stale");
        assert_eq!(stale, 3);
        let failed = store
            .get(Some("alice"), "c2")
            .await
            .expect("get")
            .expect("present");
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (Status::Failed, Some("restarted"))
        );

        // Age: everything before second 4 goes (c1 of alice and bob); count: keep newest 1.
        let cutoff = record("x", "x", 4).created_at;
        assert_eq!(store.prune(cutoff, 10).await.expect("prune"), 2);
        assert_eq!(store.prune(cutoff, 1).await.expect("prune"), 1);
        assert_eq!(ids(store.list(None, None, 10).await.expect("list")), ["c3"]);
        store.ping().await.expect("ping");
    }
}
