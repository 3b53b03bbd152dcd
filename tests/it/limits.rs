//! Slow, idle and too many clients, over raw sockets: a trickled body holds no request slot and
//! times out (408), a slow head and an idle keep-alive connection are closed, and beyond
//! `limits.max_connections` a new connection is closed at once while `/healthz` still answers on
//! a freed one.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::sse::{DONE, text_chunk};
use crate::support::{FakeUpstream, Reply, TestApp, chat_body, test_config};

/// Generous bound for anything the server must do "soon": well above the configured timeouts.
const BOUND: Duration = Duration::from_secs(10);

/// Reads until the peer closes (or `BOUND` passes, which fails the test).
async fn read_to_close(stream: &mut (impl AsyncReadExt + Unpin)) -> String {
    let mut out = Vec::new();
    let result = tokio::time::timeout(BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(
        result.is_ok(),
        "the server did not close the connection within {BOUND:?}"
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one response head (up to the blank line) and the body its Content-Length announces.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(BOUND, async {
        let mut byte = [0u8; 1];
        while !out.ends_with(b"\r\n\r\n") {
            assert_eq!(
                stream.read(&mut byte).await.expect("read"),
                1,
                "closed early"
            );
            out.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&out).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).await.expect("body");
        out.extend_from_slice(&body);
    })
    .await
    .expect("a response within the bound");
    String::from_utf8_lossy(&out).into_owned()
}

fn head(length: usize, extra: &str) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         x-harness: passthrough\r\ncontent-length: {length}\r\n{extra}\r\n"
    )
}

async fn quick_upstream() -> FakeUpstream {
    FakeUpstream::fixed(Reply::sse(&[&text_chunk("hi"), DONE])).await
}

#[tokio::test]
async fn trickled_bodies_hold_no_request_slot_and_time_out_with_408() {
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_concurrent_requests = 4;
    config.limits.request_read_timeout = Duration::from_secs(2);
    config.limits.request_idle_timeout = Duration::from_secs(1);
    let app = TestApp::start(config).await;

    // Four clients send a head and part of a body, then go quiet. `100 Continue` comes when the
    // server starts reading the body: from then on, each is as far in as it will get.
    let mut slow = Vec::new();
    for _ in 0..4 {
        let mut socket = TcpStream::connect(app.addr).await.unwrap();
        socket
            .write_all(head(1000, "expect: 100-continue\r\n").as_bytes())
            .await
            .unwrap();
        let continued = read_response(&mut socket).await;
        assert!(continued.starts_with("HTTP/1.1 100"), "{continued}");
        socket.write_all(br#"{"model":"m","#).await.unwrap();
        slow.push(socket);
    }

    // All four slots are still free for complete requests.
    let body = chat_body(true);
    let answers =
        futures_util::future::join_all((0..4).map(|_| app.chat("passthrough", &body))).await;
    for answer in answers {
        assert_eq!(answer.status(), 200);
        answer.bytes().await.unwrap();
    }

    // And the quiet ones are answered 408 in OpenAI's error shape, then closed.
    for mut socket in slow {
        let text = read_to_close(&mut socket).await;
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
        let error: serde_json::Value = serde_json::from_str(body).expect("JSON error body");
        assert_eq!(error["error"]["code"], "request_timeout", "{body}");
    }
    assert_eq!(
        upstream.count(),
        4,
        "no trickled request reached the upstream"
    );
}

#[tokio::test]
async fn a_body_trickled_slower_than_the_total_timeout_is_cut_at_the_total() {
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.request_read_timeout = Duration::from_secs(1);
    // Never silent long enough for the idle bound: only the total can end it.
    config.limits.request_idle_timeout = Duration::from_secs(30);
    let app = TestApp::start(config).await;
    let socket = TcpStream::connect(app.addr).await.unwrap();
    let (mut reader, mut writer) = socket.into_split();
    writer.write_all(head(10_000, "").as_bytes()).await.unwrap();
    // Pacing, not proof: the proof is the 408, which only the total bound can give.
    let trickle = tokio::spawn(async move {
        for _ in 0..500 {
            if writer.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let text = read_to_close(&mut reader).await;
    trickle.abort();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("limits.request_read_timeout"), "{text}");
}

#[tokio::test]
async fn a_slow_head_and_an_idle_keep_alive_connection_are_closed() {
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.keep_alive_timeout = Duration::from_secs(1);
    let app = TestApp::start(config).await;

    let mut half_head = TcpStream::connect(app.addr).await.unwrap();
    half_head
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: proxy\r\n")
        .await
        .unwrap();
    read_to_close(&mut half_head).await;

    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: proxy\r\n\r\n")
        .await
        .unwrap();
    let answer = read_response(&mut idle).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(read_to_close(&mut idle).await, "", "closed without a word");
}

#[tokio::test]
async fn beyond_max_connections_a_new_connection_is_closed_and_a_freed_slot_serves_healthz() {
    const N: usize = 8;
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_connections = N;
    let app = TestApp::start(config).await;

    // N connections, each proven accepted by a served request, kept open.
    let mut held = Vec::new();
    for _ in 0..N {
        let mut socket = TcpStream::connect(app.addr).await.unwrap();
        socket
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: proxy\r\n\r\n")
            .await
            .unwrap();
        assert!(read_response(&mut socket).await.starts_with("HTTP/1.1 200"));
        held.push(socket);
    }

    // The next one is closed at once, unanswered.
    let mut extra = TcpStream::connect(app.addr).await.unwrap();
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: proxy\r\n\r\n")
        .await;
    assert_eq!(read_to_close(&mut extra).await, "");

    // Free one slot: a fresh connection gets `/healthz` (and the refusal was counted).
    drop(held.pop());
    let deadline = tokio::time::Instant::now() + BOUND;
    let metrics = loop {
        let client = reqwest::Client::new();
        if let Ok(response) = client.get(app.url("/healthz")).send().await {
            assert_eq!(response.status(), 200);
            response.bytes().await.unwrap();
            // The same (pooled) connection: the freed slot is the only one.
            let metrics = client.get(app.url("/metrics")).send().await.unwrap();
            break metrics.text().await.unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no slot came free within {BOUND:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        metrics.contains("harness_proxy_connections_rejected_total"),
        "{metrics}"
    );
}

#[tokio::test]
async fn bodies_beyond_the_in_flight_budget_get_503_with_retry_after() {
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_body_bytes = 1024 * 1024;
    config.limits.max_inflight_body_bytes = 2 * 1024 * 1024;
    let app = TestApp::start(config).await;

    // Two 1 MiB bodies being received fill the budget (their declared length is reserved when
    // their reading starts, which `100 Continue` signals).
    let mut receiving = Vec::new();
    for _ in 0..2 {
        let mut socket = TcpStream::connect(app.addr).await.unwrap();
        socket
            .write_all(head(1024 * 1024, "expect: 100-continue\r\n").as_bytes())
            .await
            .unwrap();
        assert!(read_response(&mut socket).await.starts_with("HTTP/1.1 100"));
        receiving.push(socket);
    }
    let refused = app.chat("passthrough", &chat_body(true)).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let (_, code, message) = crate::support::error_of(refused).await;
    assert_eq!(code, "overloaded");
    assert!(message.contains("request bodies"), "{message}");

    // One of them finishes: its bytes are given back and the next request goes through.
    let mut done = receiving.pop().unwrap();
    let mut body = br#"{"model":"m","messages":[]}"#.to_vec();
    body.resize(1024 * 1024, b' ');
    done.write_all(&body).await.unwrap();
    assert!(read_response(&mut done).await.starts_with("HTTP/1.1 200"));
    drop(done);
    let served = app.chat("passthrough", &chat_body(true)).await;
    assert_eq!(served.status(), 200);
}

/// The client side of an HTTP/2 (h2c, prior knowledge) connection's opening: the preface and an
/// empty SETTINGS frame.
const H2C_PREFACE_AND_SETTINGS: &[u8] =
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

#[tokio::test]
async fn silent_connections_are_closed_and_free_their_slots_for_healthz() {
    const N: usize = 4;
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_connections = N;
    config.limits.keep_alive_timeout = Duration::from_secs(1);
    let app = TestApp::start(config).await;

    // N connections that never send a byte, and N h2c ones that send only their opening: each
    // is closed by the server, and once they are, `/healthz` is served again.
    let mut silent = Vec::new();
    for _ in 0..N {
        silent.push(TcpStream::connect(app.addr).await.unwrap());
    }
    for socket in &mut silent {
        assert_eq!(read_to_close(socket).await, "", "closed without a word");
    }
    let mut openings = Vec::new();
    for _ in 0..N {
        let mut socket = TcpStream::connect(app.addr).await.unwrap();
        socket.write_all(H2C_PREFACE_AND_SETTINGS).await.unwrap();
        openings.push(socket);
    }
    for socket in &mut openings {
        read_to_close(socket).await;
    }
    let response = reqwest::get(app.url("/healthz")).await.unwrap();
    assert_eq!(response.status(), 200);
}

/// However a connection's first bytes arrive, what follows is served: the request line's first
/// byte alone (HTTP/2's preface starts with it too), the request whole, or nothing at all before
/// the client closes.
#[tokio::test]
async fn a_request_is_served_however_its_first_bytes_arrive() {
    let upstream = quick_upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let request = [head(body.len(), "connection: close\r\n").as_bytes(), body].concat();

    let mut split = TcpStream::connect(app.addr).await.unwrap();
    split.write_all(&request[..1]).await.unwrap();
    split.flush().await.unwrap();
    tokio::task::yield_now().await;
    split.write_all(&request[1..]).await.unwrap();
    let answer = read_to_close(&mut split).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("hi"), "the upstream's answer: {answer}");

    let mut whole = TcpStream::connect(app.addr).await.unwrap();
    whole.write_all(&request).await.unwrap();
    let answer = read_to_close(&mut whole).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("hi"), "the upstream's answer: {answer}");

    drop(TcpStream::connect(app.addr).await.unwrap());
    let response = reqwest::get(app.url("/healthz")).await.unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_after_its_request() {
    let upstream = quick_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.keep_alive_timeout = Duration::from_secs(1);
    let app = TestApp::start(config).await;

    let tcp = TcpStream::connect(app.addr).await.unwrap();
    let (mut client, connection) = h2::client::handshake(tcp).await.unwrap();
    let connection = tokio::spawn(connection);
    let request = http::Request::get(app.url("/healthz")).body(()).unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    assert_eq!(response.await.unwrap().status(), 200);

    // Nothing more is asked: the server ends the connection (GOAWAY, then close).
    let ended = tokio::time::timeout(BOUND, connection).await;
    assert!(
        ended.is_ok(),
        "the idle HTTP/2 connection was still open after {BOUND:?}"
    );
}

#[tokio::test]
async fn under_a_low_open_file_limit_idle_sockets_neither_exhaust_descriptors_nor_keep_healthz_away()
 {
    use crate::support::binary::Proxy;
    let upstream = quick_upstream().await;
    let proxy = Proxy::start_limited(
        &upstream.base_url(),
        &[("HARNESS_PROXY__LIMITS__KEEP_ALIVE_TIMEOUT", "1s")],
        Some(200),
    )
    .await;
    let logs = proxy
        .wait_for_logs(|logs| logs.contains("limits.max_connections lowered"))
        .await;
    assert!(logs.contains("lowered_to=68"), "{logs}");

    let addr: std::net::SocketAddr = proxy.base.trim_start_matches("http://").parse().unwrap();
    let mut idle = Vec::new();
    for _ in 0..400 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // The idle ones are closed (those over the cap at once, the rest by their timer); then
    // `/healthz` answers again.
    for socket in &mut idle {
        read_to_close(socket).await;
    }
    let response = reqwest::get(format!("{}/healthz", proxy.base))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let logs = proxy.logs();
    assert!(!logs.contains("Too many open files"), "{logs}");
}
