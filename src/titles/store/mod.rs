//! `TitleStore`: where title records live. Backends: `memory` (bounded, one process), `sqlite`
//! (embedded default: one host, any number of processes) and `redis` (shared by replicas). Records
//! are keyed by (owner, id) so two callers can never read or block each other's conversations.
//!
//! Replica safety lives here: `claim` is one atomic insert-if-absent whose answer decides who
//! titles; pending records name the process (`instance`) running them, and each process keeps a
//! lease that `fail_stale_pending` checks, so no process fails another live one's titles.

pub mod background;
#[cfg(test)]
pub(crate) mod contract;
pub mod memory;
pub mod redis;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::TitlesConfig;
use crate::store::Backend;
pub use crate::store::{Refusal, StoreError};

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
    /// The process titling it (its `titles.instance_id`); its lease says whether it still runs.
    pub instance: String,
    /// The title text streamed so far, so a subscriber on any process can catch up.
    pub text: String,
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

#[async_trait]
pub trait TitleStore: Send + Sync {
    /// Inserts the pending record unless one exists for (owner, id), atomically: `true` means this
    /// caller won the claim and runs the title.
    async fn claim(&self, record: &TitleRecord) -> Result<bool, StoreError>;
    /// Writes the pending record of a conversation this process just named (no other can have
    /// claimed its fresh id). No request waits for it, so a backend may write it in the
    /// background, after what it already has queued there.
    async fn insert_fresh(&self, record: &TitleRecord) -> Result<(), StoreError> {
        self.claim(record).await.map(|_| ())
    }
    /// Replaces the streamed text of a record that is still pending (no-op otherwise).
    async fn set_text(&self, owner: &str, id: &str, text: &str) -> Result<(), StoreError>;
    /// Writes a title's outcome (status, title, error, updated_at), inserting the whole record if
    /// the store lost it meanwhile (a Redis restart), so a finished title is never dropped.
    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError>;
    /// `finish` for several outcomes at once (the batch `titles::writer` gathered); a backend
    /// that can writes them in one transaction. On an error none may be assumed written.
    async fn finish_many(&self, records: &[TitleRecord]) -> Result<(), StoreError> {
        for record in records {
            self.finish(record).await?;
        }
        Ok(())
    }
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
    /// Says `instance` is alive until `until`.
    async fn renew_lease(&self, instance: &str, until: DateTime<Utc>) -> Result<(), StoreError>;
    /// Marks pending records as failed when their instance's lease has expired (or is unknown),
    /// and, when `own` is given, those of that instance too (left by an earlier run of it).
    async fn fail_stale_pending(
        &self,
        own: Option<&str>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// Takes back a claim whose answer the chat path did not get (or got too late): if (owner, id)
    /// is still pending and owned by `record.instance`, it becomes `failed` with `reason`.
    /// `true` when it did; `false` when there was nothing of ours to take back.
    async fn withdraw(&self, record: &TitleRecord, reason: &str) -> Result<bool, StoreError>;
    /// Readiness: the store can be written right now.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Whether other processes may read this store (then running titles mirror their text to it).
    fn shared(&self) -> bool;
}

/// The title records in the shared backend (`titles.store`, opened once by the state).
pub fn open(config: &TitlesConfig, backend: &Backend) -> Result<Arc<dyn TitleStore>, StoreError> {
    Ok(match backend {
        Backend::Memory => Arc::new(memory::MemoryStore::new(config.max_records)),
        Backend::Sqlite(file) => Arc::new(sqlite::SqliteStore::on(file)?),
        Backend::Redis(server) => Arc::new(redis::RedisStore::on(
            server.clone(),
            config.retention,
            config.max_records,
        )),
    })
}
