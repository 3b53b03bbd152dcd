//! The memo's tables in the shared SQLite file (`store::SqliteFile`: the connection the title
//! records use too), so processes sharing the file share the memo: `reasoning_memo_answer` holds each
//! answer's reasoning once, `reasoning_memo_call` each call's key (32 bytes) and the answer it
//! refers to, `reasoning_memo_usage` what each caller's answers and all of them count (kept by
//! triggers, so every delete, whoever makes it, keeps it true). A write drops expired answers and
//! then the oldest past the caller's bound and past the total, in its own transaction; upkeep
//! (`prune`) does the same without a write. Deleting an answer deletes its references (trigger).
//! Every call runs on the blocking pool.
//!
//! The layout before issue 30 (`reasoning_memo`: one row per call id, each with the reasoning)
//! is dropped at open: its rows expire within a day anyway, and they are what filled files to
//! gigabytes. A turn continued across the upgrade on another replica finds nothing, as after a
//! restart.
//!
//! Owns: the `reasoning_memo_*` tables. Must not: touch the title tables.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::shared::{Entry, SharedMemo};
use super::{Bounds, Evicted, Usage};
use crate::store::{SqliteFile, StoreError};

const SCHEMA: &str = "
DROP TABLE IF EXISTS reasoning_memo;
CREATE TABLE IF NOT EXISTS reasoning_memo_answer (
    id         INTEGER PRIMARY KEY,
    owner      TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    rows       INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    text       TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS reasoning_memo_answer_by_owner ON reasoning_memo_answer (owner, id);
CREATE INDEX IF NOT EXISTS reasoning_memo_answer_by_expiry ON reasoning_memo_answer (expires_at);
CREATE TABLE IF NOT EXISTS reasoning_memo_call (
    key    BLOB    PRIMARY KEY,
    answer INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reasoning_memo_call_by_answer ON reasoning_memo_call (answer);
CREATE TABLE IF NOT EXISTS reasoning_memo_usage (
    owner TEXT    PRIMARY KEY,
    bytes INTEGER NOT NULL,
    rows  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS reasoning_memo_answer_added AFTER INSERT ON reasoning_memo_answer
BEGIN
    INSERT INTO reasoning_memo_usage (owner, bytes, rows)
        VALUES (NEW.owner, NEW.bytes, NEW.rows), ('', NEW.bytes, NEW.rows)
        ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes, rows = rows + excluded.rows;
END;
CREATE TRIGGER IF NOT EXISTS reasoning_memo_answer_gone AFTER DELETE ON reasoning_memo_answer
BEGIN
    DELETE FROM reasoning_memo_call WHERE answer = OLD.id;
    UPDATE reasoning_memo_usage SET bytes = bytes - OLD.bytes, rows = rows - OLD.rows
        WHERE owner IN (OLD.owner, '');
    DELETE FROM reasoning_memo_usage WHERE owner = OLD.owner AND rows <= 0;
END;
";

/// The `reasoning_memo_usage` row that counts every caller's answers.
const TOTAL: &str = "";

pub struct SqliteMemo {
    file: Arc<SqliteFile>,
    bounds: Bounds,
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

impl SqliteMemo {
    /// The memo in the file at `path`, opened for it alone (tests; the proxy shares its file,
    /// `on`).
    pub fn open(path: &Path, bounds: Bounds) -> Result<Self, StoreError> {
        Self::on(&Arc::new(SqliteFile::open(path)?), bounds)
    }

    /// The memo's tables in the shared file, on its shared connection.
    pub fn on(file: &Arc<SqliteFile>, bounds: Bounds) -> Result<Self, StoreError> {
        file.now(|conn| conn.execute_batch(SCHEMA))?;
        Ok(Self {
            file: file.clone(),
            bounds,
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.file.with(work).await
    }
}

/// A call's key as stored: the 32 bytes its hex names (an unreadable one as its text).
fn blob(key: &str) -> Vec<u8> {
    hex::decode(key).unwrap_or_else(|_| key.as_bytes().to_vec())
}

fn usage(c: &Connection, owner: &str) -> rusqlite::Result<Usage> {
    let found = c
        .query_row(
            "SELECT bytes, rows FROM reasoning_memo_usage WHERE owner = ?1",
            params![owner],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .optional()?;
    let (bytes, rows) = found.unwrap_or((0, 0));
    Ok(Usage {
        bytes: u64::try_from(bytes).unwrap_or(0),
        rows: u64::try_from(rows).unwrap_or(0),
    })
}

/// Deletes the oldest answer of `owner` (every caller's when `TOTAL`) while its usage is past
/// `bound`; how many went.
fn evict(c: &Connection, owner: &str, bound: Usage) -> rusqlite::Result<u64> {
    let mut gone = 0;
    while !usage(c, owner)?.within(bound) {
        let deleted = if owner == TOTAL {
            c.execute(
                "DELETE FROM reasoning_memo_answer WHERE id = \
                 (SELECT id FROM reasoning_memo_answer ORDER BY id LIMIT 1)",
                [],
            )?
        } else {
            c.execute(
                "DELETE FROM reasoning_memo_answer WHERE id = \
                 (SELECT id FROM reasoning_memo_answer WHERE owner = ?1 ORDER BY id LIMIT 1)",
                params![owner],
            )?
        };
        if deleted == 0 {
            break;
        }
        gone += 1;
    }
    Ok(gone)
}

fn put_at(
    c: &mut Connection,
    entry: Entry<'_>,
    now: i64,
    expires_at: i64,
    bounds: Bounds,
) -> rusqlite::Result<Evicted> {
    let size = Usage::of_answer(entry.text.len(), entry.calls.len());
    if entry.calls.is_empty() || !size.within(bounds.caller) {
        return Ok(Evicted::default());
    }
    // Immediate: a write that starts as a read and then upgrades can meet another process's
    // write and fail at once instead of waiting for it.
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM reasoning_memo_answer WHERE expires_at <= ?1",
        params![now],
    )?;
    tx.execute(
        "INSERT INTO reasoning_memo_answer (owner, bytes, rows, expires_at, text) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            entry.owner,
            i64::try_from(size.bytes).unwrap_or(i64::MAX),
            i64::try_from(size.rows).unwrap_or(i64::MAX),
            expires_at,
            entry.text
        ],
    )?;
    let answer = tx.last_insert_rowid();
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO reasoning_memo_call (key, answer) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET answer = excluded.answer",
        )?;
        for key in entry.calls {
            stmt.execute(params![blob(key), answer])?;
        }
    }
    let evicted = Evicted {
        caller: evict(&tx, entry.owner, bounds.caller)?,
        total: evict(&tx, TOTAL, bounds.total)?,
    };
    tx.commit()?;
    Ok(evicted)
}

fn get_at(c: &Connection, keys: &[String], now: i64) -> rusqlite::Result<Vec<Option<String>>> {
    let mut stmt = c.prepare_cached(
        "SELECT a.text FROM reasoning_memo_call c JOIN reasoning_memo_answer a ON a.id = c.answer \
         WHERE c.key = ?1 AND a.expires_at > ?2",
    )?;
    keys.iter()
        .map(|key| {
            stmt.query_row(params![blob(key), now], |r| r.get(0))
                .optional()
        })
        .collect()
}

/// Deletes what expired by `now`, then the oldest past the total bound.
fn prune_at(c: &mut Connection, now: i64, bounds: Bounds) -> rusqlite::Result<u64> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let expired = tx.execute(
        "DELETE FROM reasoning_memo_answer WHERE expires_at <= ?1",
        params![now],
    )?;
    let excess = evict(&tx, TOTAL, bounds.total)?;
    tx.commit()?;
    Ok(expired as u64 + excess)
}

#[async_trait]
impl SharedMemo for SqliteMemo {
    async fn put(&self, entry: Entry<'_>, ttl: Duration) -> Result<Evicted, StoreError> {
        let (owner, calls, text) = (
            entry.owner.to_owned(),
            entry.calls.to_vec(),
            entry.text.to_owned(),
        );
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let bounds = self.bounds;
        self.with(move |c| {
            let now = now_ms();
            let entry = Entry {
                owner: &owner,
                calls: &calls,
                text: &text,
            };
            put_at(c, entry, now, now.saturating_add(ttl), bounds)
        })
        .await
    }

    /// The keys hash the owner in: the table needs no other scope.
    async fn get(&self, _owner: &str, keys: &[String]) -> Result<Vec<Option<String>>, StoreError> {
        let keys = keys.to_vec();
        self.with(move |c| get_at(c, &keys, now_ms())).await
    }

    async fn prune(&self) -> Result<u64, StoreError> {
        let bounds = self.bounds;
        self.with(move |c| prune_at(c, now_ms(), bounds)).await
    }
}

#[cfg(test)]
impl SqliteMemo {
    /// The file's pages in use (its size less its free list), as this connection sees it.
    fn used_bytes(&self) -> u64 {
        let conn = self.file.connection();
        let c = conn.lock().expect("lock");
        let pragma = |name: &str| -> i64 {
            c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .expect("pragma")
        };
        let used = pragma("page_count") - pragma("freelist_count");
        u64::try_from(used * pragma("page_size")).expect("positive")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::reasoning_memo::STORE_BOUNDS;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(hex::encode).collect()
    }

    #[tokio::test]
    async fn satisfies_the_memo_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let measured = Arc::new(SqliteMemo::open(&path, STORE_BOUNDS).expect("open"));
        let footprint: super::super::contract::Footprint = Box::new(move || {
            let store = measured.clone();
            Box::pin(async move { store.used_bytes() })
        });
        super::super::contract::run(
            |bounds| {
                let store = SqliteMemo::open(&path, bounds).expect("open");
                Some(Arc::new(store) as Arc<dyn SharedMemo>)
            },
            Some(footprint),
        )
        .await;
        // Another connection to the file (another process) reads the same tables.
        let other = SqliteMemo::open(&path, STORE_BOUNDS).expect("reopen");
        let (owner, key, text) = super::super::contract::last_written();
        let seen = other.get(owner, &[key]).await;
        assert_eq!(seen.expect("get"), [Some(text.to_owned())]);
    }

    fn entry<'a>(owner: &'a str, calls: &'a [String], text: &'a str) -> Entry<'a> {
        Entry { owner, calls, text }
    }

    fn count(c: &Connection, table: &str) -> i64 {
        c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    }

    #[test]
    fn expired_answers_are_not_read_and_take_their_references_along() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memo = SqliteMemo::open(&dir.path().join("t.db"), STORE_BOUNDS).expect("open");
        let conn = memo.file.connection();
        let mut c = conn.lock().expect("lock");
        let (old, new) = (keys(&["old", "old2"]), keys(&["new"]));
        put_at(&mut c, entry("a", &old, "aaaa"), 0, 100, STORE_BOUNDS).expect("put");
        put_at(&mut c, entry("a", &new, "bbbb"), 0, 300, STORE_BOUNDS).expect("put");
        let read = |c: &Connection, now| get_at(c, &keys(&["old", "new"]), now).expect("get");
        assert_eq!(read(&c, 50), [Some("aaaa".into()), Some("bbbb".into())]);
        assert_eq!(read(&c, 150), [None, Some("bbbb".into())]);
        assert_eq!(prune_at(&mut c, 150, STORE_BOUNDS).expect("prune"), 1);
        assert_eq!(
            count(&c, "reasoning_memo_call"),
            1,
            "its references went too"
        );
        assert_eq!(
            usage(&c, TOTAL).expect("usage"),
            Usage::of_answer(4, 1),
            "the usage follows"
        );
    }

    /// The layout before issue 30 (a row per call id, each with the reasoning) goes at open.
    #[test]
    fn the_old_table_is_dropped_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let c = Connection::open(&path).expect("open");
        c.execute_batch(
            "CREATE TABLE reasoning_memo (key TEXT PRIMARY KEY, text TEXT NOT NULL, \
             expires_at INTEGER NOT NULL); INSERT INTO reasoning_memo VALUES ('k', 't', 1);",
        )
        .expect("old layout");
        drop(c);
        let memo = SqliteMemo::open(&path, STORE_BOUNDS).expect("open");
        let conn = memo.file.connection();
        let c = conn.lock().expect("lock");
        let old: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'reasoning_memo'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(old, 0);
    }
}
