//! The memo's tables in the shared SQLite file (`store::SqliteFile`: the connection the title
//! records use too), so processes sharing the file share the memo: `reasoning_memo_answer` holds each
//! answer's reasoning once (`text`; the server's `signature` and its `redacted` thinking as a
//! JSON array, both null when the answer had none), `reasoning_memo_call` each call's key (32 bytes) and the answer it
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
//! A file made before issue 34's signature lacks the two nullable columns: they are added at open
//! (`migrate`), and its answers read back without them.
//!
//! Owns: the `reasoning_memo_*` tables. Must not: touch the title tables.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::shared::{Entry, SharedMemo};
use super::{Bounds, Evicted, Thought, Usage};
use crate::store::{SqliteFile, StoreError};

const SCHEMA: &str = "
DROP TABLE IF EXISTS reasoning_memo;
CREATE TABLE IF NOT EXISTS reasoning_memo_answer (
    id         INTEGER PRIMARY KEY,
    owner      TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    rows       INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    text       TEXT    NOT NULL,
    signature  TEXT,
    redacted   TEXT
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

/// The answer table's columns added after it was first made (issue 34), nullable: a file made
/// before gets them at open.
const ADDED_COLUMNS: [&str; 2] = ["signature TEXT", "redacted TEXT"];

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
        file.now(|conn| {
            conn.execute_batch(SCHEMA)?;
            migrate(conn)
        })?;
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

/// Adds the columns a file made before lacks, in one immediate transaction: two processes
/// opening an old file at once add them once (the second sees them there).
fn migrate(c: &mut Connection) -> rusqlite::Result<()> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let present: Vec<String> = {
        let mut stmt = tx.prepare("SELECT name FROM pragma_table_info('reasoning_memo_answer')")?;
        stmt.query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    for column in ADDED_COLUMNS {
        let name = column.split(' ').next().unwrap_or(column);
        if !present.iter().any(|p| p == name) {
            tx.execute_batch(&format!(
                "ALTER TABLE reasoning_memo_answer ADD COLUMN {column}"
            ))?;
        }
    }
    tx.commit()
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
    let size = Usage::of_answer(entry.thought.bytes(), entry.calls.len());
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
        "INSERT INTO reasoning_memo_answer \
         (owner, bytes, rows, expires_at, text, signature, redacted) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            entry.owner,
            i64::try_from(size.bytes).unwrap_or(i64::MAX),
            i64::try_from(size.rows).unwrap_or(i64::MAX),
            expires_at,
            entry.thought.text,
            entry.thought.signature,
            entry.thought.stored_redacted()
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

fn get_at(c: &Connection, keys: &[String], now: i64) -> rusqlite::Result<Vec<Option<Thought>>> {
    let mut stmt = c.prepare_cached(
        "SELECT a.text, a.signature, a.redacted FROM reasoning_memo_call c \
         JOIN reasoning_memo_answer a ON a.id = c.answer WHERE c.key = ?1 AND a.expires_at > ?2",
    )?;
    keys.iter()
        .map(|key| {
            stmt.query_row(params![blob(key), now], |r| {
                let redacted: Option<String> = r.get(2)?;
                Ok(Thought::from_stored(
                    r.get(0)?,
                    r.get(1)?,
                    redacted.as_deref(),
                ))
            })
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
        let (owner, calls, thought) = (
            entry.owner.to_owned(),
            entry.calls.to_vec(),
            entry.thought.clone(),
        );
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let bounds = self.bounds;
        self.with(move |c| {
            let now = now_ms();
            let entry = Entry {
                owner: &owner,
                calls: &calls,
                thought: &thought,
            };
            put_at(c, entry, now, now.saturating_add(ttl), bounds)
        })
        .await
    }

    /// The keys hash the owner in: the table needs no other scope.
    async fn get(&self, _owner: &str, keys: &[String]) -> Result<Vec<Option<Thought>>, StoreError> {
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
#[path = "sqlite_tests.rs"]
mod tests;
