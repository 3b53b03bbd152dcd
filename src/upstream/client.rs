//! The pooled HTTP client `Upstream` sends with: hyper-util's client over hyper-rustls
//! (HTTP/1.1, and HTTP/2 where TLS negotiates it; webpki's roots), through the proxy the
//! environment names for the upstream (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`,
//! read from the injected env as curl reads them).
//!
//! The proxy is chosen once, at start-up: every request goes to the one configured base URL,
//! so the choice is the same for all of them. An HTTPS upstream is reached through a `CONNECT`
//! tunnel, a plain-HTTP one by sending the request whole to the proxy (absolute-form, with its
//! `Proxy-Authorization`).
//!
//! Not reqwest: per request it parsed the URL again, cloned the headers twice and ran redirect
//! and retry layers the proxy never uses (the proxy retries itself, before the first byte, and
//! follows no redirect): about a quarter of passthrough's instructions (BENCHMARKS.md).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Uri};
use http_body::{Body, Frame, SizeHint};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tower::ServiceExt as _;

use super::EnvSource;
use crate::conversation::body_parts::BodyParts;

pub(super) type Response = http::Response<hyper::body::Incoming>;

/// TCP keep-alive on upstream connections (idle time, probe interval, probes), and how long
/// written data may stay unacknowledged: a long, quiet stream's dead peer is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);
const KEEPALIVE_RETRIES: u32 = 3;
const USER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

pub(super) struct HttpClient {
    inner: Client<Bounded, OutBody>,
    /// Sent on every request when a plain-HTTP upstream is reached through a forward proxy
    /// that has credentials (a tunnel sends them in its `CONNECT` instead).
    proxy_authorization: Option<HeaderValue>,
}

/// Settings of the client, from `UpstreamConfig`.
pub(super) struct ClientSettings<'a> {
    pub base_url: &'a str,
    pub connect_timeout: Duration,
    pub pool_max_idle_per_host: usize,
}

impl HttpClient {
    pub(super) fn new(settings: &ClientSettings<'_>, env: &EnvSource) -> Result<Self, String> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_keepalive(Some(KEEPALIVE));
        http.set_keepalive_interval(Some(KEEPALIVE));
        http.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        http.set_tcp_user_timeout(Some(USER_TIMEOUT));
        let (route, proxy_authorization) = Route::for_upstream(http, settings.base_url, env)?;
        let tls = tls_config()?;
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(route);
        let connector = Bounded {
            inner: connector,
            timeout: settings.connect_timeout,
        };
        let inner = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(settings.pool_max_idle_per_host)
            .build(connector);
        Ok(Self {
            inner,
            proxy_authorization,
        })
    }

    /// Sends one request and waits for the response head.
    pub(super) async fn send(
        &self,
        mut request: http::Request<OutBody>,
    ) -> Result<Response, hyper_util::client::legacy::Error> {
        if let Some(auth) = &self.proxy_authorization {
            request
                .headers_mut()
                .insert(http::header::PROXY_AUTHORIZATION, auth.clone());
        }
        self.inner.request(request).await
    }
}

/// Whether the upstream turned the request away unprocessed, so it is safe to send again: an
/// HTTP/2 stream it refused (RFC 9113 §8.7) or a graceful `GOAWAY` that left the stream out.
/// reqwest's client retried these by itself; `Upstream::send` now does, within its retries.
pub(super) fn refused_unprocessed(err: &(dyn std::error::Error + 'static)) -> bool {
    super::causes(err)
        .find_map(|s| s.downcast_ref::<h2::Error>())
        .is_some_and(|h2| {
            let refused = h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM);
            let goaway = h2.is_go_away() && h2.reason() == Some(h2::Reason::NO_ERROR);
            h2.is_remote() && (refused || goaway)
        })
}

/// rustls with ring and webpki's roots, as the reqwest build before it had.
fn tls_config() -> Result<rustls::ClientConfig, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

/// The whole connect (TCP, a proxy's tunnel, TLS) bounded by `upstream.connect_timeout`; running
/// out of it is a timed-out `io::Error` (`classify` tells it).
#[derive(Clone)]
pub(super) struct Bounded {
    inner: HttpsConnector<Route>,
    timeout: Duration,
}

impl tower::Service<Uri> for Bounded {
    type Response = MaybeHttpsStream<Conn>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let connecting = self.inner.call(dst);
        let timeout = self.timeout;
        Box::pin(async move {
            tokio::time::timeout(timeout, connecting)
                .await
                .unwrap_or_else(|_| {
                    Err(Box::new(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "connecting to the upstream timed out",
                    )))
                })
        })
    }
}

/// How connections to the upstream are made: straight, through a `CONNECT` tunnel, or to a
/// forward proxy that is sent the whole request.
#[derive(Clone)]
pub(super) struct Route {
    http: HttpConnector,
    via: Via,
}

#[derive(Clone)]
enum Via {
    Direct,
    Tunnel(Tunnel<HttpConnector>),
    Forward(Uri),
}

impl Route {
    /// The route to `base_url` the environment's proxy variables ask for, and the forward
    /// proxy's credentials. A proxy this client cannot use is an error at start-up, not a
    /// failure of every request.
    fn for_upstream(
        http: HttpConnector,
        base_url: &str,
        env: &EnvSource,
    ) -> Result<(Self, Option<HeaderValue>), String> {
        let first = |names: [&str; 2]| names.iter().find_map(|n| env(n)).unwrap_or_default();
        let matcher = Matcher::builder()
            .all(first(["ALL_PROXY", "all_proxy"]))
            .http(first(["HTTP_PROXY", "http_proxy"]))
            .https(first(["HTTPS_PROXY", "https_proxy"]))
            .no(first(["NO_PROXY", "no_proxy"]))
            .build();
        let direct = Self {
            http: http.clone(),
            via: Via::Direct,
        };
        let Ok(upstream) = base_url.parse::<Uri>() else {
            return Ok((direct, None));
        };
        let Some(proxy) = matcher.intercept(&upstream) else {
            return Ok((direct, None));
        };
        let proxy_uri = proxy.uri().clone();
        if proxy_uri.scheme_str() != Some("http") {
            return Err(format!(
                "the environment's proxy for the upstream is {}://…; only an http:// proxy is \
                 supported (set NO_PROXY to reach the upstream directly)",
                proxy_uri.scheme_str().unwrap_or("?")
            ));
        }
        let auth = proxy.basic_auth().cloned().map(|mut value| {
            value.set_sensitive(true);
            value
        });
        if upstream.scheme_str() == Some("https") {
            let mut tunnel = Tunnel::new(proxy_uri, http.clone());
            if let Some(auth) = auth {
                tunnel = tunnel.with_auth(auth);
            }
            let via = Via::Tunnel(tunnel);
            return Ok((Self { http, via }, None));
        }
        let via = Via::Forward(proxy_uri);
        Ok((Self { http, via }, auth))
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<Uri> for Route {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each call readies its own clone (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let http = self.http.clone();
        match &self.via {
            Via::Direct => Box::pin(async move {
                let io = http.oneshot(dst).await?;
                Ok(Conn { io, forward: false })
            }),
            Via::Tunnel(tunnel) => {
                let tunnel = tunnel.clone();
                Box::pin(async move {
                    let io = tunnel.oneshot(dst).await?;
                    Ok(Conn { io, forward: false })
                })
            }
            Via::Forward(proxy) => {
                let proxy = proxy.clone();
                Box::pin(async move {
                    let io = http.oneshot(proxy).await?;
                    Ok(Conn { io, forward: true })
                })
            }
        }
    }
}

/// A TCP connection to the upstream or its proxy. `forward`: the peer is a forward proxy, so
/// requests on it are written in absolute form.
pub(super) struct Conn {
    io: TokioIo<TcpStream>,
    forward: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forward)
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

/// A request body, one frame per run of `BodyParts` (hyper queues them for one vectored write).
/// With a signal it reports when the client starts sending it: the request head has been written
/// by then, so a caller can order two requests without waiting for an answer.
pub(super) struct OutBody {
    data: BodyParts,
    /// The next run to send.
    next: usize,
    signal: Option<tokio::sync::oneshot::Sender<()>>,
}

impl OutBody {
    pub(super) fn new(data: BodyParts, signal: Option<tokio::sync::oneshot::Sender<()>>) -> Self {
        Self {
            data,
            next: 0,
            signal,
        }
    }

    fn left(&self) -> &[Bytes] {
        self.data.parts().get(self.next..).unwrap_or_default()
    }
}

impl Body for OutBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(signal) = this.signal.take() {
            let _ = signal.send(());
        }
        let run = this.left().first().cloned();
        if run.is_some() {
            this.next += 1;
        }
        Poll::Ready(run.map(|run| Ok(Frame::data(run))))
    }

    fn is_end_stream(&self) -> bool {
        // A body with a signal is polled even when empty, so the signal goes.
        self.left().is_empty() && self.signal.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left().iter().map(|run| run.len() as u64).sum())
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
