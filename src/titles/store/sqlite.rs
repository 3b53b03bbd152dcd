//! SQLite store (embedded default): WAL journal, schema created on open, every call on the blocking
//! pool so the async runtime never waits on disk.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Cursor, Status, StoreError, TitleRecord, TitleStore};

pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS titles (
    owner      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    title      TEXT,
    status     TEXT    NOT NULL,
    error      TEXT,
    model      TEXT    NOT NULL,
    harness    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner, id)
);
CREATE INDEX IF NOT EXISTS titles_by_created ON titles (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS titles_by_owner_created ON titles (owner, created_at DESC, id DESC);
";

/// Databases created before titles knew their client protocol get the column (chat, then the only
/// protocol).
const ADD_PROTOCOL: &str = "ALTER TABLE titles ADD COLUMN protocol TEXT NOT NULL DEFAULT 'chat'";

const COLUMNS: &str =
    "owner, id, title, status, error, model, harness, created_at, updated_at, protocol";

fn backend(err: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(err.to_string())
}

impl SqliteStore {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| backend(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path)
            .map_err(|e| backend(format!("cannot open {}: {e}", path.display())))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(backend)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        let has_protocol = conn.prepare("SELECT protocol FROM titles LIMIT 0").is_ok();
        if !has_protocol {
            conn.execute_batch(ADD_PROTOCOL).map_err(backend)?;
        }
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn
                .lock()
                .map_err(|_| backend("sqlite connection lock poisoned"))?;
            work(&conn).map_err(backend)
        })
        .await
        .map_err(backend)?
    }
}

fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

fn from_micros(value: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(value).single().unwrap_or_default()
}

fn row_to_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<TitleRecord> {
    let status: String = row.get(3)?;
    Ok(TitleRecord {
        owner: row.get(0)?,
        id: row.get(1)?,
        title: row.get(2)?,
        status: Status::parse(&status).unwrap_or(Status::Failed),
        error: row.get(4)?,
        model: row.get(5)?,
        harness: row.get(6)?,
        created_at: from_micros(row.get(7)?),
        updated_at: from_micros(row.get(8)?),
        protocol: row.get(9)?,
    })
}

#[async_trait]
impl TitleStore for SqliteStore {
    async fn insert_pending(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        let r = record.clone();
        self.with(move |c| {
            let changed = c.execute(
                &format!("INSERT OR IGNORE INTO titles ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
                params![
                    r.owner,
                    r.id,
                    r.title,
                    r.status.as_str(),
                    r.error,
                    r.model,
                    r.harness,
                    micros(r.created_at),
                    micros(r.updated_at),
                    r.protocol
                ],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        let r = record.clone();
        self.with(move |c| {
            c.execute(
                "UPDATE titles SET status = ?3, title = ?4, error = ?5, updated_at = ?6 WHERE owner = ?1 AND id = ?2",
                params![r.owner, r.id, r.status.as_str(), r.title, r.error, micros(r.updated_at)],
            )
            .map(|_| ())
        })
        .await
    }

    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError> {
        let owner = owner.map(str::to_owned);
        let id = id.to_owned();
        self.with(move |c| match owner {
            Some(owner) => c
                .query_row(&format!("SELECT {COLUMNS} FROM titles WHERE owner = ?1 AND id = ?2"), params![owner, id], row_to_record)
                .optional(),
            None => c
                .query_row(
                    &format!("SELECT {COLUMNS} FROM titles WHERE id = ?1 ORDER BY created_at DESC LIMIT 1"),
                    params![id],
                    row_to_record,
                )
                .optional(),
        })
        .await
    }

    async fn list(
        &self,
        owner: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        let owner = owner.map(str::to_owned);
        let (at, id) = match before {
            Some(c) => (c.created_at_micros, c.id.clone()),
            None => (i64::MAX, String::new()),
        };
        let bounded = before.is_some();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(move |c| {
            let sql = format!(
                "SELECT {COLUMNS} FROM titles WHERE (?1 IS NULL OR owner = ?1) \
                 AND (?2 = 0 OR created_at < ?3 OR (created_at = ?3 AND id < ?4)) \
                 ORDER BY created_at DESC, id DESC LIMIT ?5"
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![owner, bounded, at, id, limit], row_to_record)?;
            rows.collect()
        })
        .await
    }

    async fn prune(&self, older_than: DateTime<Utc>, keep: usize) -> Result<u64, StoreError> {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.with(move |c| {
            let aged = c.execute("DELETE FROM titles WHERE created_at < ?1", params![micros(older_than)])?;
            let excess = c.execute(
                "DELETE FROM titles WHERE rowid NOT IN (SELECT rowid FROM titles ORDER BY created_at DESC, id DESC LIMIT ?1)",
                params![keep],
            )?;
            Ok((aged + excess) as u64)
        })
        .await
    }

    async fn fail_stale_pending(
        &self,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let reason = reason.to_owned();
        self.with(move |c| {
            c.execute(
                "UPDATE titles SET status = 'failed', error = ?1, updated_at = ?2 WHERE status = 'pending'",
                params![reason, micros(now)],
            )
            .map(|n| n as u64)
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn satisfies_the_store_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        super::super::contract::run(&store).await;
    }

    #[tokio::test]
    async fn a_database_from_before_protocols_gets_the_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch(
                "CREATE TABLE titles (owner TEXT NOT NULL, id TEXT NOT NULL, title TEXT, \
                 status TEXT NOT NULL, error TEXT, model TEXT NOT NULL, harness TEXT NOT NULL, \
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (owner, id)); \
                 INSERT INTO titles VALUES ('o', 'old', 'Old title', 'done', NULL, 'm', 'opencode', 1, 2);",
            )
            .expect("old schema");
        }
        let store = SqliteStore::open(&path).expect("open migrates");
        let old = store
            .get(Some("o"), "old")
            .await
            .expect("get")
            .expect("kept");
        assert_eq!(
            (old.title.as_deref(), old.protocol.as_str()),
            (Some("Old title"), "chat")
        );
        let mut new = super::super::contract::record("o", "new", 3);
        new.protocol = "responses".into();
        store.insert_pending(&new).await.expect("insert");
        let read = store
            .get(Some("o"), "new")
            .await
            .expect("get")
            .expect("kept");
        assert_eq!(read.protocol, "responses");
        drop(store);
        SqliteStore::open(&path).expect("reopening a migrated database");
    }

    #[tokio::test]
    async fn records_survive_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nested/dir/t.db");
        {
            let store = SqliteStore::open(&path).expect("open");
            store
                .insert_pending(&super::super::contract::record("o", "keep-me", 1))
                .await
                .expect("insert");
        }
        let store = SqliteStore::open(&path).expect("reopen");
        assert!(
            store
                .get(Some("o"), "keep-me")
                .await
                .expect("get")
                .is_some()
        );
        let mode: String = store
            .with(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
            .await
            .expect("pragma");
        assert_eq!(mode, "wal");
    }
}
