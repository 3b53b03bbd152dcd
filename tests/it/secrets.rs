//! Through the real binary's logs: no key, bearer token or Authorization value ever reaches a log
//! line, and the access log tells a finished answer from a dropped one.

use std::time::Duration;

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, USAGE_CHUNK, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step};

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
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, UPSTREAM_KEY).unwrap();
    let key_file = key_file.display().to_string();
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_LEVEL", "debug"),
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            ("HARNESS_PROXY__UPSTREAM__API_KEY_FILE", &key_file),
            ("HARNESS_PROXY__AUTH__ADMIN_TOKEN", "admin-SECRET-0003"),
        ],
    )
    .await;
    let base = proxy.base.clone();
    let client = reqwest::Client::new();
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
    // Five requests went through (three chats, titles, models): wait for their five log lines.
    proxy
        .wait_for_logs(|logs| logs.matches("\"message\":\"request\"").count() >= 5)
        .await;
    let logs = proxy.logs();
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

/// The access-log `outcome` of each request, in order.
fn outcomes(logs: &str) -> Vec<String> {
    logs.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["message"] == "request" && entry["path"] == "/v1/chat/completions")
        .map(|entry| entry["outcome"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A streamed answer chosen by the request's text: `full` ends at once; `late` sends its
/// finish_reason, then (like Codex's usage chunk and `[DONE]`) keeps sending for seconds; `early`
/// keeps sending for seconds before its finish_reason. A hang-up is noticed at the proxy's next
/// write, so the seconds of trailing events make every hang-up land where it was meant to.
fn scripted(r: &Recorded) -> Reply {
    let body = String::from_utf8_lossy(&r.body).into_owned();
    let trailing = |steps: &mut Vec<Step>| {
        for _ in 0..100 {
            steps.push(Step::Sleep(Duration::from_millis(50)));
            steps.push(Step::Send(text_chunk(" more").into_bytes()));
        }
    };
    let mut steps = vec![Step::Send(text_chunk("hi").into_bytes())];
    if body.contains("early") {
        trailing(&mut steps);
    }
    steps.push(Step::Send(finish_chunk("stop").into_bytes()));
    if body.contains("late") {
        trailing(&mut steps);
    }
    steps.push(Step::Send(USAGE_CHUNK.as_bytes().to_vec()));
    steps.push(Step::Send(DONE.as_bytes().to_vec()));
    Reply::steps(steps)
}

#[tokio::test]
async fn a_client_that_hangs_up_after_its_answer_is_not_logged_as_a_disconnect() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| scripted(r)).await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            ("HARNESS_PROXY__TITLES__ORDER", "off"),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let chat = |harness: &str, text: &str| {
        let body = serde_json::json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": text}]});
        client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("x-harness", harness)
            .json(&body)
            .send()
    };
    for harness in ["opencode", "passthrough"] {
        // Read up to the finish_reason, then hang up.
        let mut response = chat(harness, "late").await.unwrap();
        let mut seen = String::new();
        while !seen.contains("finish_reason\":\"stop") {
            seen.push_str(std::str::from_utf8(&response.chunk().await.unwrap().unwrap()).unwrap());
        }
        drop(response);
        // Hang up before anything finished.
        let mut early = chat(harness, "early").await.unwrap();
        early.chunk().await.unwrap();
        drop(early);
        // And one read to the end.
        let full = chat(harness, "full").await.unwrap();
        full.bytes().await.unwrap();
    }
    // Each line is written when the proxy notices; wait for all six (bounded).
    let logs = proxy.wait_for_logs(|logs| outcomes(logs).len() >= 6).await;
    let mut seen = outcomes(&logs);
    seen.sort();
    assert_eq!(
        seen,
        [
            "client_closed_after_answer",
            "client_closed_after_answer",
            "client_disconnected",
            "client_disconnected",
            "complete",
            "complete"
        ]
    );
}

/// Issue 30 item 6: a client that hung up before the upstream's answer began left no access-log
/// line and no `requests_total` count (the handler was dropped before the line is written); it
/// gets both, as `client_disconnected` with nginx's 499, "client closed request".
#[tokio::test]
async fn a_client_that_hangs_up_before_the_upstream_answers_is_logged_and_counted() {
    let upstream = FakeUpstream::fixed(Reply::Hang).await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            ("HARNESS_PROXY__TITLES__ORDER", "off"),
        ],
    )
    .await;
    let url = format!("{}/v1/chat/completions", proxy.base);
    let waiting = tokio::spawn(async move {
        let body = serde_json::json!({"model": "m", "stream": true,
            "messages": [{"role": "user", "content": "hi"}]});
        reqwest::Client::new()
            .post(url)
            .header("x-harness", "opencode")
            .json(&body)
            .send()
            .await
    });
    // The signal: the request is upstream, whose answer never begins. Then the client goes.
    upstream.wait_for_requests(1).await;
    waiting.abort();
    let _ = waiting.await;
    let logs = proxy.wait_for_logs(|logs| !outcomes(logs).is_empty()).await;
    assert_eq!(outcomes(&logs), ["client_disconnected"], "{logs}");
    let metrics = reqwest::get(format!("{}/metrics", proxy.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let counted = metrics.lines().any(|line| {
        line.starts_with("harness_proxy_requests_total{")
            && line.contains("code=\"499\"")
            && line.ends_with(" 1")
    });
    assert!(counted, "{metrics}");
}
