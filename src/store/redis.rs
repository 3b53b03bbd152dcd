//! One lazily made, self-reconnecting Redis connection (shared by every user of the server), and
//! how Redis errors map to store errors.

use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

use super::{Refusal, StoreError};

/// After a failed connection attempt, calls fail at once for this long instead of each waiting.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(500);

/// One self-reconnecting connection, made on first use: a Redis that is down at start-up does
/// not stop the proxy, and while it stays down calls fail at once rather than each waiting.
pub struct LazyConnection {
    client: redis::Client,
    state: Mutex<ConnState>,
}

#[derive(Default)]
struct ConnState {
    manager: Option<ConnectionManager>,
    failed_at: Option<Instant>,
}

impl LazyConnection {
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let client =
            redis::Client::open(url).map_err(|e| StoreError::Backend(format!("bad URL: {e}")))?;
        Ok(Self {
            client,
            state: Mutex::new(ConnState::default()),
        })
    }

    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// A handle on the shared connection (cheap to clone).
    pub(crate) async fn get(&self) -> Result<ConnectionManager, StoreError> {
        let mut state = self.state.lock().await;
        if let Some(manager) = &state.manager {
            return Ok(manager.clone());
        }
        if state
            .failed_at
            .is_some_and(|at| at.elapsed() < RECONNECT_BACKOFF)
        {
            return Err(unavailable("connection refused recently"));
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_secs(1))
            .set_response_timeout(Duration::from_secs(2))
            .set_number_of_retries(1);
        match ConnectionManager::new_with_config(self.client.clone(), config).await {
            Ok(manager) => {
                state.failed_at = None;
                state.manager = Some(manager.clone());
                Ok(manager)
            }
            Err(err) => {
                state.failed_at = Some(Instant::now());
                Err(unavailable(err))
            }
        }
    }
}

pub fn unavailable(err: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

pub fn classify(err: &redis::RedisError) -> StoreError {
    if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() {
        return unavailable(err);
    }
    let refusal = match err.code() {
        Some("OOM") => Refusal::Full,
        Some("READONLY" | "MISCONF") => Refusal::ReadOnly,
        _ => return StoreError::Backend(err.to_string()),
    };
    StoreError::Refusing {
        refusal,
        reason: err.to_string(),
    }
}

#[cfg(test)]
mod classify_tests {
    use super::*;

    #[test]
    fn a_full_or_read_only_redis_is_not_called_unreachable() {
        let cases = [
            ("OOM", Some(Refusal::Full)),
            ("MISCONF", Some(Refusal::ReadOnly)),
            ("READONLY", Some(Refusal::ReadOnly)),
            ("WRONGTYPE", None),
        ];
        for (code, want) in cases {
            let err = redis::make_extension_error(code.to_owned(), Some("refused".to_owned()));
            let got = match classify(&err) {
                StoreError::Refusing { refusal, .. } => Some(refusal),
                StoreError::Backend(_) => None,
                other @ StoreError::Unavailable(_) => panic!("{code}: {other}"),
            };
            assert_eq!(got, want, "{code}");
        }
        let io =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(matches!(classify(&io), StoreError::Unavailable(_)));
    }
}
