//! The SQLite file: how every user of it opens a connection, and the one foreground connection
//! they share (the title records' batched writer keeps a connection of its own, on its own thread,
//! `titles::store::background`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::StoreError;

/// The store's file, open: its path and the foreground connection its users share, each call on
/// the blocking pool (`with`), so the async runtime never waits on disk.
pub struct SqliteFile {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

impl SqliteFile {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            conn: Arc::new(Mutex::new(open_connection(path)?)),
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shared connection, for a user's own `with` (its schema set up, its calls made).
    pub fn connection(&self) -> Arc<Mutex<Connection>> {
        self.conn.clone()
    }

    /// Runs `work` on the shared connection on the blocking pool.
    pub async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut conn).map_err(backend)
        })
        .await
        .map_err(backend)?
    }

    /// Runs `work` on the shared connection now, on this thread (start-up: schemas).
    pub fn now<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        work(&mut conn).map_err(backend)
    }
}

/// A connection to the store's file (its directory made first), as every user of the file opens
/// it: WAL (readers never wait for the writer), commits without fsync (a crash loses at most the
/// last commits, never the file), and a wait for the other writers.
pub fn open_connection(path: &Path) -> Result<Connection, StoreError> {
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
    Ok(conn)
}

fn backend(err: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(err.to_string())
}
