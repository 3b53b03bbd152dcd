//! Issue 8 item 9: secrets and shapes. The upstream URL's password never reaches a log or
//! `check-config`; every error the proxy's own code produces is OpenAI-shaped JSON (what hyper
//! answers before a request exists is pinned down here as the documented exception); a body of the
//! wrong shape is `invalid_request`; a conversation id that is not a safe path segment is refused.

use std::process::{Command, Stdio};

use crate::support::binary::Proxy;
use crate::support::raw::{exchange, request};
use crate::support::sse::{DONE, hello_stream, read_all};
use crate::support::{FakeUpstream, Reply, TestApp, chat_body, error_of, test_config};

#[tokio::test]
async fn the_upstream_password_is_redacted_in_check_config_and_the_start_up_log() {
    let output = Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
        .args([
            "check-config",
            "--upstream",
            "http://user:PASS-0001@127.0.0.1:9/v1",
        ])
        .env_clear()
        .env("HARNESS_PROXY__TITLES__STORE", "memory")
        .stdin(Stdio::null())
        .output()
        .expect("check-config runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("PASS-0001"), "{stdout}");
    assert!(
        stdout.contains("base_url = \"http://user:<redacted>@127.0.0.1:9/v1\""),
        "{stdout}"
    );

    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let with_password = format!("http://user:PASS-0002@{}/v1", upstream.addr);
    let proxy = Proxy::start(&with_password, &[("HARNESS_PROXY__LOG_FORMAT", "json")]).await;
    let logs = proxy.logs();
    assert!(logs.contains("harness-proxy serving"), "{logs}");
    assert!(!logs.contains("PASS-0002"), "{logs}");
}

#[tokio::test]
async fn path_parameters_that_are_not_utf8_answer_openai_json() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for (method, target) in [
        ("GET", "/titles/%FF%FE"),
        ("GET", "/titles/%FF%FE/stream"),
        ("POST", "/harness/%FF%FE/v1/chat/completions"),
    ] {
        let answer = exchange(
            app.addr,
            &request(
                method,
                target,
                &["authorization: Bearer k", "content-length: 0"],
            ),
        )
        .await;
        assert_eq!(answer.status, 400, "{target}: {}", answer.text());
        let body = answer.json();
        assert_eq!(body["error"]["code"], "invalid_path", "{target}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{target}");
    }
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn a_body_of_the_wrong_shape_is_invalid_request_and_broken_json_is_invalid_json() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for (body, code) in [
        (
            r#"{"model":"m","messages":[{"role":1}]}"#,
            "invalid_request",
        ),
        (
            r#"{"model":"m","messages":[{"role":[]}]}"#,
            "invalid_request",
        ),
        (
            r#"{"model":"m","messages":{"role":"user"}}"#,
            "invalid_request",
        ),
        (r#"{"role":1}"#, "invalid_request"),
        (r#"{"model":"m","messages":[{"role":"user""#, "invalid_json"),
        (r#"{"model":"m",}"#, "invalid_json"),
        ("not json", "invalid_json"),
    ] {
        let response = app
            .post("/v1/chat/completions")
            .header("x-harness", "opencode")
            .body(body)
            .send()
            .await
            .unwrap();
        let (status, got, message) = error_of(response).await;
        assert_eq!((status, got.as_str()), (400, code), "{body}: {message}");
    }
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn conversation_ids_that_are_not_a_safe_path_segment_are_refused() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let long = "a".repeat(129);
    let bad = [
        "..",
        ".",
        "../../etc/passwd",
        "a/b",
        "a\\b",
        "%2e%2e",
        "a b",
        "a?b",
        "a#b",
        long.as_str(),
    ];
    let mut tried = 0;
    for header in [
        "x-conversation-id",
        "x-session-id",
        "session_id",
        "session-id",
    ] {
        for id in bad {
            for harness in ["passthrough", "opencode"] {
                let response = app
                    .post("/v1/chat/completions")
                    .header("x-harness", harness)
                    .header(header, id)
                    .bearer_auth("k")
                    .json(&chat_body(true))
                    .send()
                    .await
                    .unwrap();
                let (status, code, message) = error_of(response).await;
                assert_eq!(
                    (status, code.as_str()),
                    (400, "invalid_conversation_id"),
                    "{header}: {id:?} via {harness}: {message}"
                );
                assert!(message.contains(header), "{message}");
                tried += 1;
            }
        }
    }
    assert_eq!(tried, 80);
    assert_eq!(upstream.count(), 0, "nothing refused reached the upstream");
    for id in [
        "ses_01:ab-c.d",
        "0b6f1c2e-6a35-4b8e-9a4f-3f2b4c5d6e7f",
        "...",
        "a..b",
    ] {
        let response = app
            .post("/v1/chat/completions")
            .header("x-harness", "passthrough")
            .header("x-conversation-id", id)
            .json(&chat_body(true))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{id}");
        assert_eq!(response.headers()["x-conversation-id"], id);
        assert!(read_all(response).await.ends_with(DONE));
    }
}

/// hyper answers a request it cannot parse before any handler exists, with a status line and no
/// body; there is no hook to give those a body. Pinned here so the documented list stays true.
#[tokio::test]
async fn protocol_errors_answered_by_hyper_itself_are_bodiless() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let huge_header = format!("x-big: {}", "a".repeat(512 * 1024));
    let long_uri = format!("/v1/models?{}", "a".repeat(70 * 1024));
    let cases: [(Vec<u8>, u16); 4] = [
        (
            b"GET /v1/models HTTP/1.1\r\nbad header line\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"G\x01T /v1/models HTTP/1.1\r\nhost: p\r\n\r\n".to_vec(),
            400,
        ),
        (request("GET", "/v1/models", &[&huge_header]), 431),
        (request("GET", &long_uri, &[]), 414),
    ];
    for (raw, status) in cases {
        let answer = exchange(app.addr, &raw).await;
        assert_eq!(answer.status, status);
        assert!(answer.body.is_empty(), "{}", answer.text());
    }
    assert_eq!(upstream.count(), 0);
}
