//! How many requests a connection has open, and the idle timer that reads it.
//!
//! Owns: the per-connection count (raised when hyper hands a request to the router, lowered when
//! the response body is dropped, i.e. sent or abandoned) and `idle`, which resolves once the
//! count has stayed at zero for the connection's bound (`Timers`, from `limits`); each request is handed its connection's
//! `routes::ConnectionScope` (for a socket the connection upgrades to). Must not: look at
//! requests or bodies.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http_body::{Frame, SizeHint};
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
    type Future = Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The router is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request.extensions_mut().insert(self.scope.clone());
        let open = Open::new(self.busy.clone());
        let answer = self.app.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| Body::new(Held { body, _open: open })))
        })
    }
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

/// A response body that keeps its request counted until hyper drops it.
struct Held {
    body: Body,
    _open: Open,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
