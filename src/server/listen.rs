//! The accept loop: one task per connection (hyper's HTTP/1 when its first bytes are not HTTP/2's
//! preface, `opening`; else hyper-util's auto builder, HTTP/1 and HTTP/2), a cap on open
//! connections, the idle timer of every connection, graceful drain and the final cut.
//!
//! `axum::serve` has no connection cap and no head timeout, so a few hundred idle sockets could
//! exhaust file descriptors and starve `/healthz`; this loop owns those bounds instead. hyper's
//! own head-read timer covers HTTP/1 only, and only once a first byte has arrived (the protocol
//! sniff before it has no timer), so each connection also runs an idle timer of its own: a
//! connection with no request open is closed after `min(keep_alive_timeout,
//! request_read_timeout)` before its first request and `keep_alive_timeout` after one, whatever
//! its protocol. HTTP/2 peers are also pinged, and closed when a ping goes unanswered.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::activity::{self, Timers};
use super::opening::Opening;
use crate::config::LimitsConfig;
use crate::routes::ConnectionScope;

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
    let timers = Timers::from(limits);
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
        stop.tracker
            .spawn(connection(tcp, app.clone(), timers, slot, stop.clone()));
    }
    drop(listener);
    stop.tracker.close();
    stop.tracker.wait().await;
    Ok(())
}

/// The open-connections gauge, raised for as long as the connection lives: its task, or the
/// socket its upgrade handed over (`routes::ConnectionScope`).
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

/// How often an HTTP/2 peer is pinged, and how long its answer may take before the connection is
/// closed: a peer that vanished without a FIN is found within a minute.
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

async fn connection(
    tcp: TcpStream,
    app: Router,
    timers: Timers,
    slot: OwnedSemaphorePermit,
    stop: Stop,
) {
    // The connection's slot and its place in the drain, shared with a socket it upgrades to.
    let scope = ConnectionScope {
        hold: Arc::new((Open::new(slot), stop.tracker.token())),
        stopping: stop.stopping.clone(),
        cut: stop.cut.clone(),
    };
    // TCP_NODELAY: without it a small SSE event can wait ~40 ms for Nagle's algorithm.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
    let (busy, requests) = watch::channel(0usize);
    let service = TowerToHyperService::new(activity::Counted::new(app, busy, scope));
    // What ends the connection from outside, polled only when one of its own wakers fires. In the
    // one `select!` it was, all four futures were polled on every wake of the connection, that is
    // on every event of a streamed answer: about 650 instructions an event, a fifth of what
    // passthrough adds to an event over a bare relay (BENCHMARKS.md).
    let mut ending = FuturesUnordered::new();
    ending.push(ending_signal(requests, timers, &stop));
    // Nothing is served before the first byte: whatever ends the connection meanwhile closes it.
    let opening = tokio::select! {
        biased;
        opening = Opening::peek(&tcp) => opening,
        _ = ending.next() => return,
    };
    // With upgrades: a WebSocket (`routes::responses_ws`) takes the connection over.
    let io = TokioIo::new(tcp);
    match opening {
        Opening::Http1 => {
            let conn = http1(timers).serve_connection(io, service).with_upgrades();
            until_ended(conn, |c| c.graceful_shutdown(), &mut ending, timers, &stop).await;
        }
        Opening::Undecided => {
            let builder = http1_or_http2(timers);
            let conn = builder.serve_connection_with_upgrades(io, service);
            until_ended(conn, |c| c.graceful_shutdown(), &mut ending, timers, &stop).await;
        }
        Opening::Closed => {}
    }
}

/// hyper's HTTP/1 server, its head read bounded by `timers.head`.
fn http1(timers: Timers) -> hyper::server::conn::http1::Builder {
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(timers.head)
        .keep_alive(true);
    http1
}

/// hyper-util's auto builder, which reads the opening and serves HTTP/1 as `http1` does, or
/// HTTP/2 with its peer pinged.
fn http1_or_http2(timers: Timers) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timers.head)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING_INTERVAL)
        .keep_alive_timeout(H2_PING_TIMEOUT);
    builder
}

/// Serves `conn` until it ends, or until `ending` says it must: an idle connection is told
/// goodbye (`goodbye`, its graceful shutdown) and given one more head timeout, a stopping one
/// finishes what it serves, a cut one is dropped.
async fn until_ended<C, E>(
    conn: C,
    goodbye: impl Fn(Pin<&mut C>),
    ending: &mut FuturesUnordered<impl Future<Output = Ending>>,
    timers: Timers,
    stop: &Stop,
) where
    C: Future<Output = Result<(), E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(conn);
    tokio::select! {
        biased;
        result = conn.as_mut() => return log_end(result.map_err(Into::into)),
        Some(signal) = ending.next() => match signal {
            Ending::Idle => {
                tracing::debug!("closing an idle connection");
                goodbye(conn.as_mut());
                // A peer that ignores the goodbye (an HTTP/2 GOAWAY) gets one more head timeout.
                let _ = tokio::time::timeout(timers.head, conn.as_mut()).await;
                return;
            }
            Ending::Stopping => goodbye(conn.as_mut()),
            Ending::Cut => return,
        },
    }
    tokio::select! {
        result = conn.as_mut() => log_end(result.map_err(Into::into)),
        () = stop.cut.cancelled() => {}
    }
}

/// Why a connection is ended from outside it.
enum Ending {
    /// No request for the idle bound.
    Idle,
    /// Shutdown began: the connection finishes what it serves.
    Stopping,
    /// The shutdown's grace is over.
    Cut,
}

async fn ending_signal(requests: watch::Receiver<usize>, timers: Timers, stop: &Stop) -> Ending {
    tokio::select! {
        () = activity::idle(requests, timers) => Ending::Idle,
        () = stop.stopping.cancelled() => Ending::Stopping,
        () = stop.cut.cancelled() => Ending::Cut,
    }
}

fn log_end(result: Result<(), Box<dyn std::error::Error + Send + Sync>>) {
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}
