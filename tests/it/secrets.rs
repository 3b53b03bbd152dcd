//! Through the real binary at debug level: no key, bearer token or Authorization value ever
//! reaches a log line, whatever path a request takes.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::sse::{DONE, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply};

const UPSTREAM_KEY: &str = "sk-upstream-SECRET-0001";
const CLIENT_TOKEN: &str = "client-SECRET-0002";

#[tokio::test]
async fn keys_and_tokens_never_reach_the_logs() {
    let upstream = FakeUpstream::start(|r: &Recorded, n| match n {
        0 => Reply::json(401, r#"{"error":{"message":"bad key"}}"#),
        _ if r.is_title() => Reply::sse(&[&text_chunk("Title"), DONE]),
        _ => Reply::sse(&[&text_chunk("hi"), DONE]),
    })
    .await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, UPSTREAM_KEY).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--upstream",
            &upstream.base_url(),
        ])
        .env_clear()
        .env("HARNESS_PROXY__LOG_LEVEL", "debug")
        .env("HARNESS_PROXY__LOG_FORMAT", "json")
        .env("HARNESS_PROXY__TITLES__STORE", "memory")
        .env("HARNESS_PROXY__UPSTREAM__API_KEY_FILE", &key_file)
        .env("HARNESS_PROXY__AUTH__ADMIN_TOKEN", "admin-SECRET-0003")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut up = false;
    for _ in 0..200 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(up, "the proxy started");
    let body = serde_json::json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hello"}]});
    for harness in ["opencode", "passthrough", "nope"] {
        let response = client
            .post(format!("{base}/v1/chat/completions"))
            .header("x-harness", harness)
            .bearer_auth(CLIENT_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let _ = response.bytes().await;
    }
    let _ = client
        .get(format!("{base}/titles"))
        .bearer_auth("admin-SECRET-0003")
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    let _ = client
        .get(format!("{base}/v1/models"))
        .bearer_auth(CLIENT_TOKEN)
        .send()
        .await
        .unwrap()
        .bytes()
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // SIGTERM would be the polite way; killing is enough to read what was logged so far.
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(
        logs.contains("\"request_id\""),
        "requests were logged: {logs}"
    );
    for secret in ["SECRET", "Bearer"] {
        assert!(
            !logs.contains(secret),
            "`{secret}` appears in the logs:\n{logs}"
        );
    }
    // The upstream did see the key, so it was in play.
    assert!(
        upstream
            .requests()
            .iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {UPSTREAM_KEY}")))
    );
}
