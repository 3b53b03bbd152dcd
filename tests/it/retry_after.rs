//! Issue 8 item 3: an odd `Retry-After` never panics a handler or a title task. Delta-seconds
//! too large for any integer, negative, fractional and HTTP-date values are all read defensively;
//! a wait longer than `upstream.max_retry_wait` is not waited for: the 429 reaches the client.

use std::time::Duration;

use crate::support::sse::{DONE, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, chat_body, test_config};
use harness_proxy::config::TitleOrder;

fn too_many(retry_after: &str) -> Reply {
    Reply::Full {
        status: 429,
        content_type: "application/json",
        body: br#"{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit"}}"#
            .to_vec(),
        headers: vec![("retry-after", retry_after.to_owned())],
    }
}

fn hello() -> Reply {
    Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
}

/// `Retry-After` values longer than `max_retry_wait`: the 429 goes back as is, after one try.
const TOO_LONG: [&str; 5] = [
    "99999999999999999999999",
    "18446744073709551616",
    "1e30",
    "Wed, 21 Oct 2099 07:28:00 GMT",
    "Sun Nov  6 08:49:37 2095",
];

#[tokio::test]
async fn a_retry_after_longer_than_the_longest_wait_returns_the_429() {
    for value in TOO_LONG {
        for harness in ["passthrough", "opencode"] {
            let upstream = FakeUpstream::queue(vec![too_many(value), hello()]).await;
            let mut config = test_config(&upstream.base_url());
            config.upstream.max_retries = 1;
            config.upstream.max_retry_wait = Duration::from_secs(10);
            // Only the answer's request, so the queue's first reply is its.
            config.titles.order = TitleOrder::Off;
            let app = TestApp::start(config).await;
            let response = app.chat(harness, &chat_body(true)).await;
            assert_eq!(response.status(), 429, "{harness} {value}");
            assert_eq!(
                response.headers()["retry-after"],
                value,
                "{harness} {value}"
            );
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["error"]["code"], "rate_limit", "{harness} {value}");
            assert_eq!(upstream.count(), 1, "{harness} {value}: not retried");
        }
    }
}

#[tokio::test]
async fn a_retry_after_that_is_negative_or_past_or_garbage_still_retries() {
    for value in [
        "-5",
        "-99999999999999999999999",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "NaN",
        "inf",
        "soon",
        "",
    ] {
        let upstream = FakeUpstream::queue(vec![too_many(value), hello()]).await;
        let mut config = test_config(&upstream.base_url());
        config.upstream.max_retries = 1;
        let app = TestApp::start(config).await;
        let response = app.chat("passthrough", &chat_body(true)).await;
        assert_eq!(response.status(), 200, "{value}");
        assert!(read_all(response).await.ends_with(DONE), "{value}");
        assert_eq!(upstream.count(), 2, "{value}: retried once");
    }
}

#[tokio::test]
async fn a_title_request_refused_with_a_huge_retry_after_is_recorded_failed_and_its_stream_ends() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            too_many("99999999999999999999999")
        } else {
            Reply::sse(&[&text_chunk("Hi"), &finish_chunk("stop"), DONE])
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.upstream.max_retries = 1;
    let app = TestApp::start(config).await;
    let body = serde_json::json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "user", "content": "Fix the flaky test"}
    ]});
    let response = app
        .post("/v1/chat/completions")
        .header("x-conversation-id", "conv-retry-after")
        .bearer_auth("key-a")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(read_all(response).await.ends_with(DONE));
    let stream = app
        .get("/titles/conv-retry-after/stream")
        .bearer_auth("key-a")
        .send()
        .await
        .unwrap();
    let events = read_all(stream).await;
    assert!(
        events.contains("event: error") && events.contains("upstream answered 429"),
        "{events}"
    );
    let record = app.get_json("/titles/conv-retry-after", "key-a").await;
    assert_eq!(record["status"], "failed");
    assert!(
        record["error"].as_str().unwrap().contains("429"),
        "{record}"
    );
}
