//! The accept loop: one task per connection (hyper-util's auto builder, HTTP/1 and HTTP/2), a cap
//! on open connections, the head-read / keep-alive timeout, graceful drain and the final cut.
//!
//! `axum::serve` has no connection cap and no head timeout, so a few hundred idle sockets could
//! exhaust file descriptors and starve `/healthz`; this loop owns those bounds instead.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::LimitsConfig;

/// How the loop is told to stop: `stopping` starts the drain (no new connections, idle ones close,
/// busy ones finish their requests); `cut` closes whatever is still open.
#[derive(Clone)]
pub(super) struct Stop {
    pub stopping: CancellationToken,
    pub cut: CancellationToken,
    pub tracker: TaskTracker,
}

/// Accepts until `stop.stopping`, then waits for every connection to end (or be cut).
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &LimitsConfig,
    stop: Stop,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // hyper's head-read timer starts whenever a connection waits for a request head, so it is both
    // the slow-head bound and the idle keep-alive bound.
    let head_timeout = limits.keep_alive_timeout.min(limits.request_read_timeout);
    loop {
        let accepted = tokio::select! {
            biased;
            () = stop.stopping.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
            Err(err) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Closed at once: a refused connection costs nothing while it waits.
            metrics::counter!("harness_proxy_connections_rejected_total").increment(1);
            drop(tcp);
            continue;
        };
        stop.tracker.spawn(connection(
            tcp,
            app.clone(),
            head_timeout,
            slot,
            stop.clone(),
        ));
    }
    drop(listener);
    stop.tracker.close();
    stop.tracker.wait().await;
    Ok(())
}

/// The open-connections gauge, raised for as long as the connection's task lives.
struct Open {
    /// One of `limits.max_connections`, given back when the connection ends.
    _slot: OwnedSemaphorePermit,
}

impl Open {
    fn new(slot: OwnedSemaphorePermit) -> Self {
        metrics::gauge!("harness_proxy_connections_open").increment(1.0);
        Self { _slot: slot }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::gauge!("harness_proxy_connections_open").decrement(1.0);
    }
}

async fn connection(
    tcp: TcpStream,
    app: Router,
    head_timeout: Duration,
    slot: OwnedSemaphorePermit,
    stop: Stop,
) {
    let _open = Open::new(slot);
    // TCP_NODELAY: without it a small SSE event can wait ~40 ms for Nagle's algorithm.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app));
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => return log_end(result),
        () = stop.stopping.cancelled() => conn.as_mut().graceful_shutdown(),
        () = stop.cut.cancelled() => return,
    }
    tokio::select! {
        result = conn.as_mut() => log_end(result),
        () = stop.cut.cancelled() => {}
    }
}

fn log_end(result: Result<(), Box<dyn std::error::Error + Send + Sync>>) {
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}
