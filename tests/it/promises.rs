//! Promises that held before issue 8, pinned by tests: identical requests are never coalesced,
//! a 429's rate-limit headers reach the client, and a stream that failed after its first byte is
//! not retried.

use std::sync::Arc;

use futures_util::future::join_all;
use tokio::sync::Semaphore;

use crate::support::sse::{DONE, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, chat_body, test_config};

#[tokio::test]
async fn identical_concurrent_requests_each_reach_the_upstream() {
    let gate = Arc::new(Semaphore::new(0));
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Gate(gate.clone()),
        Step::Send(text_chunk("same").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = chat_body(true);
    let answers = join_all((0..5).map(|_| app.chat("passthrough", &body)));
    // All five are at the upstream at once, none answered yet: nothing was merged.
    let (answers, seen) = tokio::join!(answers, async {
        let seen = upstream.wait_for_requests(5).await.len();
        gate.add_permits(1);
        seen
    });
    assert_eq!(seen, 5);
    for answer in answers {
        assert!(read_all(answer).await.ends_with(DONE));
    }
    assert_eq!(upstream.count(), 5);
}

#[tokio::test]
async fn a_429_keeps_its_rate_limit_headers() {
    let upstream = FakeUpstream::fixed(Reply::Full {
        status: 429,
        content_type: "application/json",
        body: br#"{"error":{"message":"slow down","type":"rate_limit","param":null,"code":null}}"#
            .to_vec(),
        headers: vec![
            ("retry-after", "7".into()),
            ("x-ratelimit-remaining-requests", "0".into()),
            ("x-ratelimit-reset-requests", "7s".into()),
        ],
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for harness in ["passthrough", "opencode"] {
        let response = app.chat(harness, &chat_body(true)).await;
        assert_eq!(response.status(), 429, "{harness}");
        let headers = response.headers();
        assert_eq!(headers["retry-after"], "7", "{harness}");
        assert_eq!(headers["x-ratelimit-remaining-requests"], "0", "{harness}");
        assert_eq!(headers["x-ratelimit-reset-requests"], "7s", "{harness}");
    }
}

#[tokio::test]
async fn a_stream_cut_after_its_first_byte_is_not_retried() {
    let cut = Arc::new(tokio::sync::Notify::new());
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Send(text_chunk("partial").into_bytes()),
        Step::Wait(cut.clone()),
        Step::Cut,
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.upstream.max_retries = 3;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let mut response = app.chat("passthrough", &chat_body(true)).await;
    response.chunk().await.unwrap();
    cut.notify_one();
    let text = read_all(response).await;
    assert!(text.contains("\"error\""), "{text}");
    assert_eq!(
        upstream.count(),
        1,
        "retried after bytes reached the client"
    );
}

/// Issue 30 item 6: the upstream's `Server` (and `X-Powered-By`) named the model server to
/// clients on answers the proxy rewrote; they are the upstream's, not the answer's.
#[tokio::test]
async fn a_rewritten_answer_does_not_name_the_upstream_server() {
    let upstream = FakeUpstream::fixed(Reply::Stream {
        steps: vec![
            Step::Send(text_chunk("hi").into_bytes()),
            Step::Send(DONE.as_bytes().to_vec()),
        ],
        headers: vec![
            ("server", "model-server/9.9".to_owned()),
            ("x-powered-by", "model-server".to_owned()),
        ],
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    for stream in [true, false] {
        let response = app.chat("opencode", &chat_body(stream)).await;
        assert_eq!(response.status(), 200);
        for name in ["server", "x-powered-by"] {
            assert!(
                response
                    .headers()
                    .get_all(name)
                    .iter()
                    .all(|v| !v.to_str().unwrap_or_default().contains("model-server")),
                "stream {stream}: {:?}",
                response.headers()
            );
        }
        read_all(response).await;
    }
    let messages = app
        .post("/v1/messages")
        .json(
            &serde_json::json!({"model": "m", "max_tokens": 10, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), 200);
    assert!(
        messages.headers().get("server").is_none(),
        "{:?}",
        messages.headers()
    );
}
