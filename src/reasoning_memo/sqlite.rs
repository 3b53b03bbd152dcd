//! The memo's table in the title store's SQLite file (its own connection, WAL like the title
//! store's), so processes sharing the file share the memo. Expired rows are never read and are
//! deleted by the title service's upkeep (`prune`), which also keeps the table within
//! `MAX_ROWS` and `MAX_BYTES`, oldest first; every call runs on the blocking pool.
//!
//! Owns: the `reasoning_memo` table. Must not: touch the title tables.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use rusqlite::{Connection, OptionalExtension, params};

use super::shared::SharedMemo;
use crate::titles::store::StoreError;

/// Rows kept at most (an answer with three calls is three rows).
pub const MAX_ROWS: i64 = 100_000;
/// Reasoning bytes kept at most.
pub const MAX_BYTES: i64 = 128 * 1024 * 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS reasoning_memo (
    key        TEXT    PRIMARY KEY,
    text       TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS reasoning_memo_by_expiry ON reasoning_memo (expires_at);
";

pub struct SqliteMemo {
    conn: Arc<Mutex<Connection>>,
}

fn backend(err: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(err.to_string())
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

impl SqliteMemo {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = crate::titles::store::sqlite::open_connection(path)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn
                .lock()
                .map_err(|_| backend("sqlite connection lock poisoned"))?;
            work(&mut conn).map_err(backend)
        })
        .await
        .map_err(backend)?
    }
}

fn put_at(
    c: &mut Connection,
    keys: &[String],
    text: &str,
    expires_at: i64,
) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO reasoning_memo (key, text, expires_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (key) DO UPDATE SET text = excluded.text, expires_at = excluded.expires_at",
        )?;
        for key in keys {
            stmt.execute(params![key, text, expires_at])?;
        }
    }
    tx.commit()
}

fn get_at(c: &Connection, keys: &[String], now: i64) -> rusqlite::Result<Vec<Option<String>>> {
    let mut stmt =
        c.prepare_cached("SELECT text FROM reasoning_memo WHERE key = ?1 AND expires_at > ?2")?;
    keys.iter()
        .map(|key| stmt.query_row(params![key, now], |r| r.get(0)).optional())
        .collect()
}

/// Deletes what expired by `now`, then the oldest past `max_rows` rows and past `max_bytes`.
fn prune_at(c: &Connection, now: i64, max_rows: i64, max_bytes: i64) -> rusqlite::Result<u64> {
    let expired = c.execute(
        "DELETE FROM reasoning_memo WHERE expires_at <= ?1",
        params![now],
    )?;
    let excess = c.execute(
        "DELETE FROM reasoning_memo WHERE key NOT IN \
         (SELECT key FROM reasoning_memo ORDER BY expires_at DESC LIMIT ?1)",
        params![max_rows],
    )?;
    let heavy = c.execute(
        "DELETE FROM reasoning_memo WHERE key IN (SELECT key FROM \
         (SELECT key, SUM(length(CAST(text AS BLOB))) OVER (ORDER BY expires_at DESC, key) AS kept \
          FROM reasoning_memo) WHERE kept > ?1)",
        params![max_bytes],
    )?;
    Ok((expired + excess + heavy) as u64)
}

#[async_trait]
impl SharedMemo for SqliteMemo {
    async fn put(&self, keys: &[String], text: &str, ttl: Duration) -> Result<(), StoreError> {
        let (keys, text) = (keys.to_vec(), text.to_owned());
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.with(move |c| put_at(c, &keys, &text, now_ms().saturating_add(ttl)))
            .await
    }

    async fn get(&self, keys: &[String]) -> Result<Vec<Option<String>>, StoreError> {
        let keys = keys.to_vec();
        self.with(move |c| get_at(c, &keys, now_ms())).await
    }

    async fn prune(&self) -> Result<u64, StoreError> {
        self.with(|c| prune_at(c, now_ms(), MAX_ROWS, MAX_BYTES))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[tokio::test]
    async fn satisfies_the_memo_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let store = Arc::new(SqliteMemo::open(&path).expect("open"));
        super::super::contract::run(|| Some(store.clone() as Arc<dyn SharedMemo>)).await;
        // A second connection to the file (another process) reads the same table.
        let other = SqliteMemo::open(&path).expect("reopen");
        let seen = other.get(&keys(&["k-shared"])).await.expect("get");
        assert_eq!(seen, [Some("shared".to_owned())]);
    }

    #[test]
    fn expired_rows_are_not_read_and_pruning_keeps_the_newest_within_bounds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memo = SqliteMemo::open(&dir.path().join("t.db")).expect("open");
        let mut c = memo.conn.lock().expect("lock");
        put_at(&mut c, &keys(&["old"]), "aaaa", 100).expect("put");
        put_at(&mut c, &keys(&["mid"]), "bbbb", 200).expect("put");
        put_at(&mut c, &keys(&["new", "new2"]), "cccc", 300).expect("put");
        let read =
            |c: &Connection, now| get_at(c, &keys(&["old", "mid", "new"]), now).expect("get");
        assert_eq!(
            read(&c, 150),
            [None, Some("bbbb".into()), Some("cccc".into())]
        );
        assert_eq!(prune_at(&c, 150, 10, 1000).expect("prune"), 1, "expired");
        assert_eq!(prune_at(&c, 150, 2, 1000).expect("prune"), 1, "rows");
        assert_eq!(read(&c, 150), [None, None, Some("cccc".into())]);
        assert_eq!(prune_at(&c, 150, 10, 4).expect("prune"), 1, "bytes");
        let left: i64 = c
            .query_row("SELECT COUNT(*) FROM reasoning_memo", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 1);
    }
}
