//! The store backend `titles.store` names, opened once and shared by everything the proxy keeps
//! in it: title records (`titles::store`), the reasoning memo's entries
//! (`memory::reasoning_memo`) and the live titles' notices (`titles::bus`). `memory` keeps
//! nothing here (each user holds its own bounded map); `sqlite` is one file and one shared
//! foreground connection (`SqliteFile`); `redis` is one self-reconnecting multiplexed connection
//! (`redis::LazyConnection`) and the key prefix every user writes under.
//!
//! Owns: opening the backend and the errors every backend maps to. Must not: know what its users
//! store (their schemas and key layouts are theirs).

pub mod redis;
#[cfg(test)]
pub(crate) mod redis_tests;
pub mod sqlite;

use std::sync::Arc;

use crate::config::StoreUrl;
pub use redis::{LazyConnection, classify};
pub use sqlite::{SqliteFile, open_connection};

/// The backend, opened once (`open`); cheap to clone, every clone the same connection.
#[derive(Clone)]
pub enum Backend {
    Memory,
    Sqlite(Arc<SqliteFile>),
    Redis(Arc<RedisServer>),
}

/// One Redis server and the prefix of every key the proxy writes there (`titles.redis_prefix`).
pub struct RedisServer {
    pub conn: LazyConnection,
    pub prefix: String,
}

impl Backend {
    /// Opens `url`: the SQLite file is created (with its directory) now; a Redis URL is parsed now
    /// and connected on first use, so a Redis that is down at start-up does not stop the proxy.
    pub fn open(url: &StoreUrl, redis_prefix: &str) -> Result<Self, StoreError> {
        Ok(match url {
            StoreUrl::Memory => Self::Memory,
            StoreUrl::Sqlite(path) => Self::Sqlite(Arc::new(SqliteFile::open(path)?)),
            StoreUrl::Redis(url) => Self::Redis(Arc::new(RedisServer {
                conn: LazyConnection::new(url)?,
                prefix: redis_prefix.to_owned(),
            })),
        })
    }

    /// Whether other processes may read what is written here.
    pub fn shared(&self) -> bool {
        !matches!(self, Self::Memory)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached right now (Redis down, file gone); callers may retry.
    #[error("title store unreachable: {0}")]
    Unavailable(String),
    #[error("title store: {0}")]
    Backend(String),
    /// The store answers but refuses writes: full (Redis `-OOM`) or read-only (`-READONLY`
    /// replica, `-MISCONF` failed snapshot). Unlike `Unavailable`, retrying soon rarely helps;
    /// someone must free memory or fix the server.
    #[error("title store refuses writes ({}): {reason}", .refusal.state())]
    Refusing { refusal: Refusal, reason: String },
}

/// Why a store that answers refuses writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Full,
    ReadOnly,
}

impl Refusal {
    /// The word `/readyz` shows as the store's `state`.
    pub fn state(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::ReadOnly => "read_only",
        }
    }
}
