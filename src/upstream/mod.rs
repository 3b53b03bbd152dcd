//! The only HTTP client of the model server: one pooled client (`client`), the send with its
//! timeouts (connect, first byte) and bounded retries before any byte reached the client.
//!
//! It returns the response head and a body stream; it never buffers a body and never parses one,
//! save the answers of an Anthropic Messages upstream to requests the proxy wrote, read one event
//! at a time into the Chat Completions answer the rest of the proxy reads (`messages`).
//!
//! Beside it: `target` (each request's URL, never outside the base URL), `credentials` (the one
//! credential that goes: the configured key, else the base URL's userinfo, else the client's
//! key when `auth.forward_client_key` allows; `x-api-key` on a Messages upstream, with
//! `anthropic-version` added here) and `idle` (the silence allowed between a body's chunks).
//! Its failures are `UpstreamError`, causes typed (the HTTP client's error, which holds no URL, an
//! `Interruption` mid-body), so no error names the upstream URL.

mod client;
mod credentials;
mod idle;
pub mod messages;
pub mod preflight;
mod target;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use http_body_util::BodyExt as _;

use crate::config::{UpstreamConfig, Wire};
use crate::conversation::body_parts::BodyParts;

// The upstream's error is classified in the error core, which `ProxyError` carries it from;
// made here, where the HTTP client is known (`classify`, `describe`).
pub use crate::error::upstream::{Interruption, UpstreamError};

/// Body chunks of an upstream response; an `Err` is the last item.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, UpstreamError>> + Send>>;

pub struct UpstreamResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: BodyStream,
}

/// One request to send: `path` is relative to the base URL (e.g. `/chat/completions?x=1`).
pub struct Outbound {
    pub method: Method,
    pub path: String,
    /// End-to-end headers to forward (already filtered by the caller).
    pub headers: HeaderMap,
    /// Its runs go out in order, a harness's kept prompt among them uncopied (`BodyParts`).
    pub body: BodyParts,
    /// The client's `Authorization`, used when no upstream key is configured.
    pub client_authorization: Option<HeaderValue>,
    /// Told when the request body starts going out (its head is written): "dispatched".
    pub dispatched: Option<tokio::sync::oneshot::Sender<()>>,
    /// The body is a Messages request the proxy wrote for a Messages upstream: its answer is
    /// read into Chat Completions (`messages`). A forwarded body's answer is never touched.
    pub messages: bool,
}

/// The environment, injected: reads one variable. Built once at start-up (the process env in
/// `cli`, a test's own map in tests) and kept, because a rotated `upstream.api_key_env` key is
/// re-read from it after an upstream 401; nothing in the library reads the process env itself.
pub type EnvSource = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

pub struct Upstream {
    client: client::HttpClient,
    /// The base URL every request's URL is joined to, and kept under.
    target: target::Target,
    /// The one credential that goes (`credentials`).
    credentials: credentials::Credentials,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
    max_retries: u32,
    max_retry_wait: Duration,
    /// The server's protocol: on `messages` the key goes in `x-api-key` and an overloaded
    /// server's 529 is retried as a 503 is.
    wire: Wire,
    /// `limits.max_sse_event_bytes`, for the Messages events read here.
    max_event: usize,
    /// Claude Code's connection check went (`preflight`): it goes once.
    preflighted: AtomicBool,
}

/// Anthropic's API version header, sent when the request carries none.
const ANTHROPIC_VERSION: &str = "2023-06-01";
// Names made once: a lookup by text parses the name on every request.
static ANTHROPIC_VERSION_HEADER: HeaderName = HeaderName::from_static("anthropic-version");
static X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("config key `upstream.api_key_file`: cannot read {path}: {source}")]
    KeyFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl Upstream {
    pub fn new(config: &UpstreamConfig, env: EnvSource) -> Result<Self, BuildError> {
        let settings = client::ClientSettings {
            base_url: &config.base_url,
            connect_timeout: config.connect_timeout,
            pool_max_idle_per_host: config.pool_max_idle_per_host,
        };
        let client = client::HttpClient::new(&settings, &env).map_err(BuildError::Client)?;
        let (target, url_credentials) = target::Target::of(&config.base_url);
        let credentials = credentials::Credentials::new(config, env, url_credentials)?;
        Ok(Self {
            client,
            target,
            credentials,
            first_byte_timeout: config.first_byte_timeout,
            idle_timeout: config.idle_timeout,
            max_retries: config.max_retries,
            max_retry_wait: config.max_retry_wait,
            wire: config.wire,
            max_event: crate::sse::DEFAULT_MAX_EVENT_BYTES,
            preflighted: AtomicBool::new(false),
        })
    }

    /// The largest event of a Messages answer read here (`limits.max_sse_event_bytes`).
    #[must_use]
    pub fn with_event_limit(mut self, max_event: usize) -> Self {
        self.max_event = max_event;
        self
    }

    /// Whether a client's own key may be sent upstream (`auth.forward_client_key`; by default
    /// it may).
    #[must_use]
    pub fn forwarding_client_key(mut self, forward: bool) -> Self {
        self.credentials.forward_client_key = forward;
        self
    }

    /// What authenticates this proxy's requests upstream, for the start-up log; `None` when
    /// nothing is sent (no key, and the client's is not forwarded).
    pub fn credential(&self) -> Option<&'static str> {
        self.credentials.describe()
    }

    /// Re-reads a file or env key (after an upstream 401). Returns whether a key is now available.
    pub fn reload_key(&self) -> bool {
        self.credentials.reload()
    }

    /// The URL of `path` (relative to the base URL, with its query), never outside the base.
    fn target(&self, path: &str) -> Result<Uri, UpstreamError> {
        self.target.url(path)
    }

    /// Sends the request and waits for the response head, retrying while nothing has been
    /// committed to the client. The body is returned as a stream guarded by the idle timeout.
    /// A 401 with a file or env key re-reads the key and retries once (keys get rotated).
    pub async fn send(&self, mut outbound: Outbound) -> Result<UpstreamResponse, UpstreamError> {
        let uri = self.target(&outbound.path)?;
        if !self.credentials.forward_client_key {
            // The client's key in Anthropic's header, carried on by passthrough: not sent either.
            outbound.headers.remove(&X_API_KEY);
        }
        if self.wire == Wire::Messages && !outbound.headers.contains_key(&ANTHROPIC_VERSION_HEADER)
        {
            outbound.headers.insert(
                ANTHROPIC_VERSION_HEADER.clone(),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        if !outbound.headers.contains_key(header::ACCEPT) {
            // Kept from the reqwest client this one replaced: upstreams saw it on every request.
            outbound
                .headers
                .insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        let has_body = outbound.dispatched.is_some()
            || !outbound.body.is_empty()
            || outbound.method == Method::POST;
        if has_body {
            outbound.headers.insert(
                header::CONTENT_LENGTH,
                HeaderValue::from(outbound.body.len()),
            );
        }
        let mut authorization = self
            .credentials
            .authorization(outbound.client_authorization.as_ref());
        if self.wire == Wire::Messages && authorization.is_some() {
            // The one key that goes is the one chosen above, in Anthropic's header.
            outbound.headers.remove(&X_API_KEY);
        }
        let mut attempt = 0u32;
        let mut reloaded = false;
        loop {
            let mut headers = outbound.headers.clone();
            if let Some(auth) = &authorization {
                let (name, value) = match self.wire {
                    Wire::Messages => credentials::anthropic_auth(auth),
                    Wire::Chat => (header::AUTHORIZATION, auth.clone()),
                };
                headers.insert(name, value);
            }
            let mut request = http::Request::new(client::OutBody::new(
                outbound.body.clone(),
                outbound.dispatched.take(),
            ));
            *request.method_mut() = outbound.method.clone();
            *request.uri_mut() = uri.clone();
            *request.headers_mut() = headers;
            let sent =
                tokio::time::timeout(self.first_byte_timeout, self.client.send(request)).await;
            let retries_left = attempt < self.max_retries;
            match sent {
                Err(_) => return Err(UpstreamError::Timeout("waiting for the response head")),
                Ok(Err(err)) => {
                    if err.is_connect() && retries_left {
                        attempt += 1;
                        metrics::counter!("harness_proxy_upstream_retries_total", "reason" => "connect").increment(1);
                        tokio::time::sleep(backoff(attempt)).await;
                        continue;
                    }
                    if retries_left && client::refused_unprocessed(&err) {
                        // Not processed: sent again at once, on another stream or connection.
                        attempt += 1;
                        metrics::counter!("harness_proxy_upstream_retries_total", "reason" => "refused_stream").increment(1);
                        continue;
                    }
                    return Err(classify(err));
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    if status == StatusCode::UNAUTHORIZED
                        && !reloaded
                        && self.credentials.is_reloadable()
                    {
                        reloaded = true;
                        self.credentials.reload();
                        authorization = self
                            .credentials
                            .authorization(outbound.client_authorization.as_ref());
                        metrics::counter!("harness_proxy_upstream_retries_total", "reason" => "401")
                            .increment(1);
                        drop(response);
                        continue;
                    }
                    if retries_left && self.retries(status) {
                        let wait = retry_after(response.headers(), std::time::SystemTime::now())
                            .unwrap_or_else(|| backoff(attempt + 1));
                        if wait <= self.max_retry_wait {
                            attempt += 1;
                            metrics::counter!("harness_proxy_upstream_retries_total", "reason" => status.as_str().to_owned()).increment(1);
                            drop(response);
                            tokio::time::sleep(wait).await;
                            continue;
                        }
                    }
                    return Ok(self.answer(response, outbound.messages));
                }
            }
        }
    }
}

impl Upstream {
    /// Whether an answer of `status` is retried (before anything reached the client).
    fn retries(&self, status: StatusCode) -> bool {
        match status.as_u16() {
            429 | 502 | 503 => true,
            // Anthropic's "overloaded".
            529 => self.wire == Wire::Messages,
            _ => false,
        }
    }

    /// The response as the proxy reads it: its body guarded by the idle timeout, and a Messages
    /// answer to a request the proxy wrote read as Chat Completions.
    fn answer(&self, response: client::Response, messages: bool) -> UpstreamResponse {
        let (head, incoming) = response.into_parts();
        let status = head.status;
        let mut headers = head.headers;
        let body = incoming.into_data_stream().map(|chunk| {
            chunk.map_err(|e| {
                UpstreamError::Interrupted(Interruption::Transport {
                    words: describe_body(&e),
                    cause: Box::new(e),
                })
            })
        });
        let mut body: BodyStream =
            Box::pin(idle::IdleTimeout::new(Box::pin(body), self.idle_timeout));
        if messages {
            if !status.is_success() {
                body = messages::error_body(body);
            } else if is_event_stream(&headers) {
                body = messages::answer(body, self.max_event);
            }
            // Its length is no longer the body's.
            headers.remove(header::CONTENT_LENGTH);
        }
        UpstreamResponse {
            status,
            headers,
            body,
        }
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempt.min(6)))
}

/// The wait a `Retry-After` asks for (RFC 9110 §10.2.3): delta-seconds or an HTTP-date. Read
/// defensively: a number too large for any integer is "longer than anyone waits", a date in the
/// past is no wait, and a negative, non-finite or unreadable value is ignored (`None`).
fn retry_after(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(
            value
                .parse::<u64>()
                .map_or(Duration::MAX, Duration::from_secs),
        );
    }
    if let Ok(seconds) = value.parse::<f64>() {
        // Fractional seconds are not in the RFC, but some servers send them.
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A failure before the response head. The client's errors hold no URL (its query may carry a
/// key: `?key=` of some servers).
fn classify(err: hyper_util::client::legacy::Error) -> UpstreamError {
    if err.is_connect() && caused_by_timeout(&err) {
        UpstreamError::Timeout("connecting")
    } else {
        UpstreamError::Unreachable {
            words: describe(&err),
            cause: Box::new(err),
        }
    }
}

/// Whether an `io::Error` that timed out is in the error's chain (a connect timeout).
fn caused_by_timeout(err: &(dyn std::error::Error + 'static)) -> bool {
    causes(err).any(|s| {
        s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    })
}

/// `err` and each of its sources, in order.
fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

/// The error chain as text.
fn describe(err: &hyper_util::client::legacy::Error) -> String {
    let kind = if err.is_connect() {
        "connection failed"
    } else {
        "request error"
    };
    chain(kind, err)
}

/// A failure mid-body, as text.
fn describe_body(err: &hyper::Error) -> String {
    chain("body error", err)
}

/// `kind`, then each cause in `err`'s chain.
fn chain(kind: &str, err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = kind.to_owned();
    for cause in causes(err).skip(1) {
        text.push_str(": ");
        text.push_str(&cause.to_string());
    }
    text
}

/// Whether a response is Server-Sent Events.
pub fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            // On every answer's path: compared in place, not lower-cased into a copy.
            v.trim_start()
                .as_bytes()
                .get(.."text/event-stream".len())
                .is_some_and(|kind| kind.eq_ignore_ascii_case(b"text/event-stream"))
        })
}

/// Hop-by-hop headers (RFC 9110 §7.6.1) never cross the proxy.
pub fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_is_told_by_its_type_in_any_case() {
        let typed = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_str(value).expect("value"),
            );
            is_event_stream(&headers)
        };
        for stream in [
            "text/event-stream",
            "Text/Event-Stream; charset=utf-8",
            "  TEXT/EVENT-STREAM",
        ] {
            assert!(typed(stream), "{stream}");
        }
        for other in [
            "text/event",
            "application/json",
            "text/event-streams-not",
            "",
        ] {
            assert_eq!(
                typed(other),
                other.starts_with("text/event-stream"),
                "{other}"
            );
        }
        assert!(!is_event_stream(&HeaderMap::new()));
    }

    #[test]
    fn retry_after_reads_every_form_without_panicking() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").expect("date");
        let read = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from_str(value).expect("value"),
            );
            retry_after(&headers, now)
        };
        assert_eq!(read("3"), Some(Duration::from_secs(3)));
        assert_eq!(read(" 0 "), Some(Duration::ZERO));
        assert_eq!(read("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(read("99999999999999999999999"), Some(Duration::MAX));
        assert_eq!(read("1e300"), Some(Duration::MAX));
        assert_eq!(
            read("Wed, 21 Oct 2026 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(read("Tue, 20 Oct 2026 07:28:00 GMT"), Some(Duration::ZERO));
        for ignored in ["-1", "-1e300", "NaN", "inf", "soon", "", "Wed, 99 Foo 2026"] {
            assert_eq!(read(ignored), None, "{ignored}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_upstream_keeps_its_typed_cause_and_tells_no_url() {
        // A port that was just free: nothing listens there.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
            listener.local_addr().expect("address").port()
        };
        let config = UpstreamConfig {
            base_url: format!("http://127.0.0.1:{port}/v1?key=secret-in-query"),
            max_retries: 0,
            ..UpstreamConfig::default()
        };
        let upstream = Upstream::new(&config, Arc::new(|_| None)).expect("builds");
        let outbound = Outbound {
            method: Method::POST,
            path: "/chat/completions".to_owned(),
            headers: HeaderMap::new(),
            body: Bytes::from_static(b"{}").into(),
            client_authorization: None,
            dispatched: None,
            messages: false,
        };
        let err = upstream.send(outbound).await.err().expect("fails");
        let message = err.to_string();
        assert!(
            message.starts_with("the upstream is unreachable: connection failed"),
            "{message}"
        );
        let cause = std::error::Error::source(&err)
            .and_then(|s| s.downcast_ref::<hyper_util::client::legacy::Error>())
            .expect("the HTTP client's error is the source");
        assert!(cause.is_connect());
        assert!(!format!("{message} {cause} {cause:?}").contains("secret-in-query"));
    }

    #[tokio::test]
    async fn a_url_that_leaves_the_base_path_is_never_sent() {
        let config = UpstreamConfig {
            // Port 9 (discard): a request that went out would fail as unreachable instead.
            base_url: "http://127.0.0.1:9/tenant-a/v1".to_owned(),
            ..UpstreamConfig::default()
        };
        let upstream = Upstream::new(&config, Arc::new(|_| None)).expect("builds");
        for path in [
            "/../../tenant-b/files",
            "/%2e%2e/%2e%2e/tenant-b",
            "/..\\..\\x",
        ] {
            let outbound = Outbound {
                method: Method::DELETE,
                path: path.to_owned(),
                headers: HeaderMap::new(),
                body: Bytes::new().into(),
                client_authorization: None,
                dispatched: None,
                messages: false,
            };
            let err = upstream.send(outbound).await.err();
            assert_eq!(err.map(|e| e.code()), Some("invalid_path"), "{path}");
        }
    }
}
