//! One lazily made, self-reconnecting Redis connection, and how Redis errors map to store errors.

use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Mutex;

use crate::titles::store::StoreError;

/// After a failed connection attempt, calls fail at once for this long instead of each waiting.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(500);

/// One self-reconnecting connection, made on first use: a Redis that is down at start-up does
/// not stop the proxy, and while it stays down calls fail at once rather than each waiting.
pub(crate) struct LazyConnection {
    client: redis::Client,
    state: Mutex<ConnState>,
}

#[derive(Default)]
struct ConnState {
    manager: Option<ConnectionManager>,
    failed_at: Option<Instant>,
}

impl LazyConnection {
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let client =
            redis::Client::open(url).map_err(|e| StoreError::Backend(format!("bad URL: {e}")))?;
        Ok(Self {
            client,
            state: Mutex::new(ConnState::default()),
        })
    }

    pub(crate) fn client(&self) -> &redis::Client {
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

pub(crate) fn unavailable(err: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

pub(crate) fn classify(err: &redis::RedisError) -> StoreError {
    if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() {
        unavailable(err)
    } else {
        StoreError::Backend(err.to_string())
    }
}
