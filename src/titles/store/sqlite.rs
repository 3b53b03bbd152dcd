//! SQLite store (embedded default): WAL journal, schema created (and older files migrated) on open,
//! every call on the blocking pool so the async runtime never waits on disk, except the writes no
//! request waits for (pending records of new conversations, running text, batched outcomes), which
//! run on the store's low-priority writer (`background`), committed together. Several processes may
//! share one file: the claim is one `INSERT ... ON CONFLICT DO NOTHING`, leases live in a table.
//! Readiness writes a probe row and checks the file is still the one opened (a removed directory
//! leaves writes landing in an unlinked file, which would lose every title silently).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::background::Background;
use super::{Cursor, Status, StoreError, TitleRecord, TitleStore};
use crate::store::{SqliteFile, open_connection};

pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    /// The batched outcome writes, on a thread and connection of their own at lower priority.
    background: Background,
    path: PathBuf,
    /// (device, inode) of the file at open: a different or missing file means the store is lost.
    identity: Option<(u64, u64)>,
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
    instance   TEXT    NOT NULL DEFAULT '',
    text       TEXT    NOT NULL DEFAULT '',
    protocol   TEXT    NOT NULL DEFAULT 'chat',
    PRIMARY KEY (owner, id)
);
CREATE TABLE IF NOT EXISTS leases (
    instance TEXT    PRIMARY KEY,
    until    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS probe (
    k  INTEGER PRIMARY KEY,
    at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS titles_by_created ON titles (created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS titles_by_owner_created ON titles (owner, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS titles_pending ON titles (status) WHERE status = 'pending';
";

/// Columns added after the first release: files created before get them on open.
const MIGRATIONS: [(&str, &str); 3] = [
    (
        "instance",
        "ALTER TABLE titles ADD COLUMN instance TEXT NOT NULL DEFAULT ''",
    ),
    (
        "text",
        "ALTER TABLE titles ADD COLUMN text TEXT NOT NULL DEFAULT ''",
    ),
    // Titles from before the other fronts were all Chat Completions conversations.
    (
        "protocol",
        "ALTER TABLE titles ADD COLUMN protocol TEXT NOT NULL DEFAULT 'chat'",
    ),
];

const COLUMNS: &str = "owner, id, title, status, error, model, harness, created_at, updated_at, instance, text, protocol";
const VALUES: &str = "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12";

fn backend(err: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(err.to_string())
}

impl SqliteStore {
    /// The store in the file at `path`, opened for it alone (tests; the proxy shares its file,
    /// `on`).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::on(&SqliteFile::open(path)?)
    }

    /// The store in the shared file: its schema made (an older file migrated) on the shared
    /// connection, and a connection of its own for the batched writer.
    pub fn on(file: &SqliteFile) -> Result<Self, StoreError> {
        file.now(|conn| {
            migrate(conn)?;
            conn.execute_batch(SCHEMA)
        })?;
        let path = file.path();
        // The writer only writes: a small page cache (256 KiB, not SQLite's 2 MiB) is enough for
        // a batch, and a burst of pending records must not grow the process by its whole cache.
        let writer = open_connection(path)?;
        writer
            .pragma_update(None, "cache_size", -256)
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        Ok(Self {
            conn: file.connection(),
            background: Background::start(writer)?,
            identity: file_identity(path),
            path: path.to_owned(),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            work(&conn).map_err(backend)
        })
        .await
        .map_err(backend)?
    }
}

/// Adds the columns an older file lacks (before the schema's indexes refer to them).
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('titles')")?;
    let columns: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if columns.is_empty() {
        return Ok(()); // a new file: the schema creates everything
    }
    for (column, sql) in MIGRATIONS {
        if !columns.iter().any(|c| c == column) {
            conn.execute_batch(sql)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|_| (0, 0))
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
        instance: row.get(9)?,
        text: row.get(10)?,
        protocol: row.get(11)?,
    })
}

#[async_trait]
impl TitleStore for SqliteStore {
    async fn claim(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        let r = record.clone();
        self.with(move |c| {
            let sql = format!(
                "INSERT INTO titles ({COLUMNS}) VALUES ({VALUES}) ON CONFLICT (owner, id) DO NOTHING"
            );
            Ok(execute_record(c, &sql, &r)? == 1)
        })
        .await
    }

    /// On the background writer: a burst of id-less first turns writes its pending records at
    /// low priority instead of taking the core from the answers.
    async fn insert_fresh(&self, record: &TitleRecord) -> Result<(), StoreError> {
        let r = record.clone();
        self.background
            .run(move |c| {
                let sql = format!(
                    "INSERT INTO titles ({COLUMNS}) VALUES ({VALUES}) ON CONFLICT (owner, id) DO NOTHING"
                );
                execute_record(c, &sql, &r).map(|_| ())
            })
            .await
    }

    /// On the background writer too: no request waits for a running title's text, and there it
    /// lands after the record's pending insert and before its outcome.
    async fn set_text(&self, owner: &str, id: &str, text: &str) -> Result<(), StoreError> {
        let (owner, id, text) = (owner.to_owned(), id.to_owned(), text.to_owned());
        self.background
            .run(move |c| {
                c.prepare_cached(
                    "UPDATE titles SET text = ?3 WHERE owner = ?1 AND id = ?2 AND status = 'pending'",
                )?
                .execute(params![owner, id, text])
                .map(|_| ())
            })
            .await
    }

    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        let r = record.clone();
        self.with(move |c| execute_record(c, &finish_sql(), &r).map(|_| ()))
            .await
    }

    /// One job of the background writer, so one savepoint of its transaction: the batch is
    /// written whole or not at all, and no request waits for it.
    async fn finish_many(&self, records: &[TitleRecord]) -> Result<(), StoreError> {
        let records = records.to_vec();
        self.background
            .run(move |c| {
                let sql = finish_sql();
                for r in &records {
                    execute_record(c, &sql, r)?;
                }
                Ok(())
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

    async fn renew_lease(&self, instance: &str, until: DateTime<Utc>) -> Result<(), StoreError> {
        let instance = instance.to_owned();
        self.with(move |c| {
            c.execute(
                "INSERT INTO leases (instance, until) VALUES (?1, ?2) \
                 ON CONFLICT (instance) DO UPDATE SET until = excluded.until",
                params![instance, micros(until)],
            )
            .map(|_| ())
        })
        .await
    }

    async fn fail_stale_pending(
        &self,
        own: Option<&str>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let reason = reason.to_owned();
        let own = own.map(str::to_owned);
        self.with(move |c| {
            c.execute(
                "UPDATE titles SET status = 'failed', error = ?1, updated_at = ?2 \
                 WHERE status = 'pending' AND (instance = ?3 OR NOT EXISTS \
                   (SELECT 1 FROM leases l WHERE l.instance = titles.instance AND l.until >= ?2))",
                params![reason, micros(now), own],
            )
            .map(|n| n as u64)
        })
        .await
    }

    async fn withdraw(&self, record: &TitleRecord, reason: &str) -> Result<bool, StoreError> {
        let (owner, id, instance) = (
            record.owner.clone(),
            record.id.clone(),
            record.instance.clone(),
        );
        let reason = reason.to_owned();
        self.with(move |c| {
            c.execute(
                "UPDATE titles SET status = 'failed', error = ?1, updated_at = ?2 \
                 WHERE owner = ?3 AND id = ?4 AND status = 'pending' AND instance = ?5",
                params![reason, micros(Utc::now()), owner, id, instance],
            )
            .map(|n| n > 0)
        })
        .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let now = file_identity(&self.path);
        if now.is_none() || now != self.identity {
            return Err(StoreError::Unavailable(format!(
                "{} was removed or replaced since start-up",
                self.path.display()
            )));
        }
        self.with(|c| {
            c.execute(
                "INSERT INTO probe (k, at) VALUES (1, ?1) ON CONFLICT (k) DO UPDATE SET at = excluded.at",
                params![micros(Utc::now())],
            )
            .map(|_| ())
        })
        .await
    }

    fn shared(&self) -> bool {
        true
    }
}

/// Runs `sql` with the record's columns bound as `?1..?11`, in `COLUMNS` order.
/// An outcome's upsert: the whole record if the store lost it, else its outcome fields.
fn finish_sql() -> String {
    format!(
        "INSERT INTO titles ({COLUMNS}) VALUES ({VALUES}) ON CONFLICT (owner, id) DO UPDATE SET \
         status = excluded.status, title = excluded.title, error = excluded.error, \
         text = excluded.text, updated_at = excluded.updated_at"
    )
}

/// Runs `sql` with `r`'s columns, its statement prepared once per connection (cached).
fn execute_record(c: &Connection, sql: &str, r: &TitleRecord) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(params![
        r.owner,
        r.id,
        r.title,
        r.status.as_str(),
        r.error,
        r.model,
        r.harness,
        micros(r.created_at),
        micros(r.updated_at),
        r.instance,
        r.text,
        r.protocol
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn satisfies_the_store_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        super::super::contract::run(std::sync::Arc::new(store)).await;
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
        store.claim(&new).await.expect("insert");
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
                .claim(&super::super::contract::record("o", "keep-me", 1))
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

    #[tokio::test]
    async fn a_file_from_before_leases_is_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).expect("open");
        old.execute_batch(
            "CREATE TABLE titles (owner TEXT NOT NULL, id TEXT NOT NULL, title TEXT, status TEXT NOT NULL, \
             error TEXT, model TEXT NOT NULL, harness TEXT NOT NULL, created_at INTEGER NOT NULL, \
             updated_at INTEGER NOT NULL, PRIMARY KEY (owner, id));
             INSERT INTO titles VALUES ('o', 'old', 'Old title', 'done', NULL, 'm', 'opencode', 1, 1);",
        )
        .expect("old schema");
        drop(old);
        let store = SqliteStore::open(&path).expect("migrates");
        let record = store
            .get(Some("o"), "old")
            .await
            .expect("get")
            .expect("kept");
        assert_eq!(record.title.as_deref(), Some("Old title"));
        assert_eq!((record.instance.as_str(), record.text.as_str()), ("", ""));
        assert!(
            store
                .claim(&super::super::contract::record("o", "new", 2))
                .await
                .expect("claim")
        );
    }

    #[tokio::test]
    async fn ping_fails_once_the_directory_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data/t.db");
        let store = SqliteStore::open(&path).expect("open");
        store.ping().await.expect("writable");
        std::fs::remove_dir_all(dir.path().join("data")).expect("remove");
        let err = store.ping().await.expect_err("lost");
        assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    }
}
