//! How many requests a connection has open, and the idle timer that reads it.
//!
//! Owns: the per-connection count (raised when hyper hands a request to the router, lowered when
//! the `OpenRequest` it puts in the request's extensions is dropped: the access log keeps it with
//! the request's line, in the response body, until that is sent or abandoned) and `idle`, which
//! resolves once the count has stayed at zero for the connection's bound (`Timers`, from
//! `limits`); each request is handed its connection's `routes::ConnectionScope` (for a socket the
//! connection upgrades to). Must not: look at requests or bodies.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use tokio::sync::watch;
use tower::Service;

use crate::config::LimitsConfig;
use crate::routes::ConnectionScope;

/// The router of one connection, counting its open requests into `busy`.
#[derive(Clone)]
pub(super) struct Counted {
    app: Router,
    busy: watch::Sender<usize>,
    scope: ConnectionScope,
}

impl Counted {
    pub(super) fn new(app: Router, busy: watch::Sender<usize>, scope: ConnectionScope) -> Self {
        Self { app, busy, scope }
    }
}

impl<B> Service<http::Request<B>> for Counted
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = RouteFuture<std::convert::Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The router is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let extensions = request.extensions_mut();
        extensions.insert(self.scope.clone());
        // Counted until the access log drops it with the answer's body (every route is under
        // `layers::Outer`): no body of its own around the answer's, which cost a boxed layer
        // on every poll of a stream.
        extensions.insert(OpenRequest {
            _open: Arc::new(Open::new(self.busy.clone())),
        });
        self.app.call(request)
    }
}

/// One open request of a connection, in its extensions: counted until the last clone drops.
#[derive(Clone)]
pub(super) struct OpenRequest {
    _open: Arc<Open>,
}

/// One open request: counted while it lives.
struct Open(watch::Sender<usize>);

impl Open {
    fn new(busy: watch::Sender<usize>) -> Self {
        busy.send_modify(|n| *n += 1);
        Self(busy)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The time bounds of one connection, from `limits`.
#[derive(Clone, Copy)]
pub(super) struct Timers {
    /// Until the first request (its first byte included), and hyper's HTTP/1 head-read timer:
    /// both the slow-head bound and the silent-connection bound.
    pub(super) head: Duration,
    /// Between requests once one was served.
    pub(super) keep_alive: Duration,
}

impl From<&LimitsConfig> for Timers {
    fn from(limits: &LimitsConfig) -> Self {
        Self {
            head: limits.keep_alive_timeout.min(limits.request_read_timeout),
            keep_alive: limits.keep_alive_timeout,
        }
    }
}

/// Resolves once no request has been open for the connection's bound: `timers.head` before the
/// first request, `timers.keep_alive` after. Never resolves while a request is open.
pub(super) async fn idle(mut requests: watch::Receiver<usize>, timers: Timers) {
    let mut bound = timers.head;
    loop {
        if requests.wait_for(|open| *open == 0).await.is_err() {
            // The service is gone: the connection is ending by itself.
            return std::future::pending().await;
        }
        if tokio::time::timeout(bound, requests.changed())
            .await
            .is_err()
        {
            return;
        }
        bound = timers.keep_alive;
    }
}
