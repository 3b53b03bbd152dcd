//! A folded answer is bounded: an upstream that streams more than `limits.max_answer_bytes` to
//! a client that did not stream gets that client a 502 `upstream_answer_too_large` in its own
//! protocol's shape, on every front, and the upstream request is dropped.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, test_config};

const LIMIT: usize = 64 * 1024;

/// A 1 KiB text delta, as many as it takes to pass the limit 16 times over, then (for a folded
/// answer) a wait that only a dropped request ends: the end comes only to a reader that read on.
fn flood(end: Option<Arc<Notify>>) -> Reply {
    let piece = text_chunk(&"a".repeat(1024));
    let mut steps = vec![Step::Send(piece.into_bytes()); 16 * LIMIT / 1024];
    steps.extend(end.map(Step::Wait));
    steps.push(Step::Send(finish_chunk("stop").into_bytes()));
    steps.push(Step::Send(DONE.as_bytes().to_vec()));
    Reply::steps(steps)
}

async fn app_over(upstream: &FakeUpstream) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.limits.max_answer_bytes = LIMIT;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    TestApp::start(config).await
}

#[tokio::test]
async fn a_folded_answer_over_the_limit_is_502_on_every_front() {
    let fronts: [(&str, Value); 3] = [
        (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        ("/v1/responses", json!({"model": "m", "input": "hi"})),
        (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ];
    for (path, body) in fronts {
        let upstream = FakeUpstream::fixed(flood(Some(Arc::new(Notify::new())))).await;
        let app = app_over(&upstream).await;
        let response = app
            .post(path)
            .header("x-harness", "opencode")
            .bearer_auth("sk-test")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 502, "{path}");
        let error: Value = response.json().await.unwrap();
        let text = error.to_string();
        assert!(text.contains("limits.max_answer_bytes"), "{path}: {text}");
        assert!(
            !text.contains("aaaa"),
            "{path}: no answer text in the error"
        );
        if path == "/v1/messages" {
            assert_eq!(error["type"], "error", "{text}");
            assert_eq!(error["error"]["type"], "api_error", "{text}");
        } else {
            assert_eq!(
                error["error"]["code"], "upstream_answer_too_large",
                "{text}"
            );
        }
        assert!(
            upstream
                .wait_for_drop(Duration::from_secs(10))
                .await
                .is_some(),
            "{path}: the upstream answer was read to its end"
        );
    }
}

#[tokio::test]
async fn a_streamed_answer_over_the_limit_is_not_bounded() {
    // The bound is on what the proxy holds: a stream it passes on holds nothing.
    let upstream = FakeUpstream::fixed(flood(None)).await;
    let app = app_over(&upstream).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .json(
            &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.len() > 16 * LIMIT, "{}", text.len());
    assert!(
        text.trim_end().ends_with(DONE.trim_end()),
        "ends with [DONE]"
    );
}
