//! The upstream client's URLs and proxies, over real sockets: a recording listener stands in
//! for the upstream and for a forward proxy.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::config::UpstreamConfig;
use crate::upstream::{EnvSource, Outbound, Upstream, UpstreamError};

fn env_of(pairs: &[(&str, &str)]) -> EnvSource {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Arc::new(move |name| map.get(name).cloned())
}

fn upstream(base_url: &str, env: EnvSource) -> Result<Upstream, String> {
    let config = UpstreamConfig {
        base_url: base_url.to_owned(),
        max_retries: 0,
        ..UpstreamConfig::default()
    };
    Upstream::new(&config, env).map_err(|e| e.to_string())
}

fn post(path: &str) -> Outbound {
    Outbound {
        method: Method::POST,
        path: path.to_owned(),
        headers: HeaderMap::new(),
        body: Bytes::from_static(b"{}").into(),
        client_authorization: None,
        dispatched: None,
        messages: false,
    }
}

/// Accepts one connection, reads its request head and answers `204`; returns the head.
async fn record_one(listener: TcpListener) -> String {
    let (mut socket, _) = listener.accept().await.expect("accepts");
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buf).await.expect("reads");
        assert!(n > 0, "the request ended before its head");
        head.extend_from_slice(&buf[..n]);
    }
    socket
        .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
        .await
        .expect("answers");
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test]
async fn a_plain_http_upstream_goes_through_the_environment_s_forward_proxy_with_its_credentials() {
    let proxy = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let proxy_url = format!("http://user:pa%20ss@{}", proxy.local_addr().expect("addr"));
    let env = env_of(&[("HTTP_PROXY", &proxy_url)]);
    // Nothing listens at the upstream's own address: only the proxy can answer.
    let upstream = upstream("http://upstream.invalid:8000/v1?api-version=2", env).expect("builds");
    let recorded = tokio::spawn(record_one(proxy));
    let response = upstream
        .send(post("/chat/completions?stream=1"))
        .await
        .map_err(|e| e.to_string())
        .expect("the proxy answers");
    assert_eq!(response.status.as_u16(), 204);
    let head = recorded.await.expect("records");
    let request_line = head.lines().next().unwrap_or_default();
    assert_eq!(
        request_line,
        "POST http://upstream.invalid:8000/v1/chat/completions?api-version=2&stream=1 HTTP/1.1"
    );
    // base64("user:pa ss")
    assert!(
        head.to_ascii_lowercase()
            .contains("proxy-authorization: basic dxnlcjpwysbzcw=="),
        "{head}"
    );
}

#[tokio::test]
async fn no_proxy_reaches_the_upstream_directly_in_origin_form() {
    let server = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = server.local_addr().expect("addr");
    let env = env_of(&[
        ("HTTP_PROXY", "http://127.0.0.1:9"),
        ("NO_PROXY", "localhost, 127.0.0.1"),
    ]);
    let upstream = upstream(&format!("http://{addr}/v1"), env).expect("builds");
    let recorded = tokio::spawn(record_one(server));
    upstream
        .send(post("/chat/completions"))
        .await
        .map_err(|e| e.to_string())
        .expect("the upstream answers");
    let head = recorded.await.expect("records");
    assert!(
        head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(!head.to_ascii_lowercase().contains("proxy-authorization"));
}

#[test]
fn a_proxy_the_client_cannot_use_is_refused_at_start_up_by_name() {
    for proxy in ["socks5://127.0.0.1:1080", "https://proxy.example:3128"] {
        let env = env_of(&[("ALL_PROXY", proxy)]);
        let refused = upstream("https://api.example/v1", env).err();
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("only an http:// proxy")),
            "{proxy}: {refused:?}"
        );
    }
}

#[tokio::test]
async fn plain_and_normalised_paths_reach_the_same_url_and_none_leaves_the_base() {
    let upstream =
        upstream("http://127.0.0.1:9/tenant/v1?api-version=2", env_of(&[])).expect("builds");
    let cases = [
        (
            "/chat/completions",
            "/tenant/v1/chat/completions?api-version=2",
        ),
        (
            "/chat/completions?a=1",
            "/tenant/v1/chat/completions?api-version=2&a=1",
        ),
        (
            "/chat/completions?",
            "/tenant/v1/chat/completions?api-version=2",
        ),
        ("/models/./x", "/tenant/v1/models/x?api-version=2"),
        ("/models/a%2e/x", "/tenant/v1/models/a%2e/x?api-version=2"),
        ("/files/a b", "/tenant/v1/files/a%20b?api-version=2"),
        ("/x#frag", "/tenant/v1/x?api-version=2"),
        ("", "/tenant/v1?api-version=2"),
    ];
    for (path, want) in cases {
        let uri = upstream.target(path).map_err(|e| e.to_string());
        assert_eq!(
            uri.as_ref()
                .ok()
                .and_then(|u| u.path_and_query())
                .map(|pq| pq.as_str()),
            Some(want),
            "{path}: {uri:?}"
        );
    }
    for escape in [
        "/../x",
        "/%2e%2e/%2e%2e/other",
        "/..\\..\\x",
        "x",
        "/../v1x",
    ] {
        assert!(
            matches!(upstream.target(escape), Err(UpstreamError::PathEscape)),
            "{escape}"
        );
    }
    // A path that is not one (no leading `/`) on a base with no path cannot name a host.
    let bare = self::upstream("http://127.0.0.1:9", env_of(&[])).expect("builds");
    assert!(bare.target("/v1/models").is_ok());
    for other_host in ["@evil.example/x", "@evil/x", ":80@evil/x"] {
        assert!(
            matches!(bare.target(other_host), Err(UpstreamError::PathEscape)),
            "{other_host}"
        );
    }
}

#[tokio::test]
async fn a_tls_handshake_that_never_answers_is_bounded_by_the_connect_timeout() {
    // Accepts TCP and then says nothing: only the connect bound can end the wait (the head's
    // bound is an hour).
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = silent.local_addr().expect("addr");
    let held = tokio::spawn(async move {
        let (socket, _) = silent.accept().await.expect("accepts");
        std::future::pending::<()>().await;
        drop(socket);
    });
    let config = UpstreamConfig {
        base_url: format!("https://{addr}/v1"),
        max_retries: 0,
        connect_timeout: std::time::Duration::from_millis(300),
        first_byte_timeout: std::time::Duration::from_secs(3600),
        ..UpstreamConfig::default()
    };
    let upstream = Upstream::new(&config, env_of(&[])).expect("builds");
    let err = upstream.send(post("/chat/completions")).await.err();
    assert!(
        matches!(err, Some(UpstreamError::Timeout("connecting"))),
        "{err:?}"
    );
    held.abort();
}

#[test]
fn only_the_upstream_s_own_refusal_counts_as_unprocessed() {
    // h2's public constructors make only errors of this side; the upstream's own REFUSED_STREAM
    // (the one case that is retried) needs an HTTP/2 server over TLS with a trusted
    // certificate, which the tests do not have.
    for reason in [
        h2::Reason::REFUSED_STREAM,
        h2::Reason::NO_ERROR,
        h2::Reason::CANCEL,
    ] {
        let local = h2::Error::from(reason);
        assert!(!super::refused_unprocessed(&local), "{reason:?}");
    }
    let io = std::io::Error::other("connection reset");
    assert!(!super::refused_unprocessed(&io));
}

/// Reads one request whole (its head and the `content-length` bytes after it), answers `204`.
async fn record_whole(listener: TcpListener) -> (String, Vec<u8>) {
    let (socket, _) = listener.accept().await.expect("accepts");
    answer_whole(
        socket,
        b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n",
    )
    .await
}

/// Reads one request whole from `socket`, answers `answer`; returns the head and the body.
async fn answer_whole(mut socket: tokio::net::TcpStream, answer: &[u8]) -> (String, Vec<u8>) {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    let (head, length) = loop {
        let n = socket.read(&mut buf).await.expect("reads");
        assert!(n > 0, "the request ended before its head");
        read.extend_from_slice(&buf[..n]);
        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&read[..end]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .expect("a content-length");
            read.drain(..end + 4);
            break (head, length);
        }
    };
    while read.len() < length {
        let n = socket.read(&mut buf).await.expect("reads");
        assert!(n > 0, "the body ended early");
        read.extend_from_slice(&buf[..n]);
    }
    socket.write_all(answer).await.expect("answers");
    (head, read)
}

/// A POST whose body is three runs, the middle one long (as opencode's kept system prompt).
fn post_in_runs() -> Outbound {
    let mut outbound = post("/chat/completions");
    outbound.body = crate::conversation::body_parts::BodyParts::from_parts(vec![
        Bytes::from_static(b"{\"messages\":[{\"role\":\"system\",\"content\":"),
        Bytes::from("\"a kept prompt\"".repeat(400)),
        Bytes::from_static(b"}]}"),
    ]);
    outbound
}

/// Sends `outbound` and checks its `204`; returns what its body is as one run.
async fn send_expecting_204(upstream: &Upstream, outbound: Outbound) -> Bytes {
    let whole = outbound.body.to_bytes();
    let response = upstream
        .send(outbound)
        .await
        .map_err(|e| e.to_string())
        .expect("answers");
    assert_eq!(response.status.as_u16(), 204);
    whole
}

#[tokio::test]
async fn a_body_of_several_runs_reaches_the_upstream_whole_with_its_length() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let upstream = upstream(&base, env_of(&[])).expect("builds");
    let recorded = tokio::spawn(record_whole(listener));
    let whole = send_expecting_204(&upstream, post_in_runs()).await;
    let (head, body) = recorded.await.expect("records");
    assert!(
        head.contains(&format!("content-length: {}", whole.len())),
        "{head}"
    );
    assert_eq!(body, whole, "every run, in order");
}

#[tokio::test]
async fn a_body_of_several_runs_is_sent_whole_again_after_a_503() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let config = UpstreamConfig {
        base_url: format!("http://{}/v1", listener.local_addr().expect("addr")),
        max_retries: 1,
        ..UpstreamConfig::default()
    };
    let upstream = Upstream::new(&config, env_of(&[])).expect("builds");
    let recorded = tokio::spawn(async move {
        let (first, _) = listener.accept().await.expect("accepts");
        let busy = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 0\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        let (_, once) = answer_whole(first, busy).await;
        let (second, _) = listener.accept().await.expect("accepts again");
        let done = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        let (_, again) = answer_whole(second, done).await;
        (once, again)
    });
    let whole = send_expecting_204(&upstream, post_in_runs()).await;
    let (once, again) = recorded.await.expect("records");
    assert_eq!(once, whole, "the first send");
    assert_eq!(again, whole, "the resend, every run again");
}
