//! Issue 8 item 7: one upstream SSE event may not grow without bound. Past
//! `limits.max_sse_event_bytes` the client gets one clean `upstream_event_too_large` error event
//! (502 when folded) and the upstream request is dropped; nothing of the oversized line is sent.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::support::sse::{data_lines, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, chat_body, error_of, test_config};
use harness_proxy::config::TitleOrder;

const LIMIT: usize = 1024 * 1024;

/// A first event, then 3 MiB of one line in 64 KiB pieces, then silence until `hold` is told.
fn endless_line(hold: &Arc<Notify>) -> Reply {
    let mut steps = vec![Step::Send(text_chunk("before").into_bytes())];
    steps.push(Step::Send(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec(),
    ));
    for _ in 0..48 {
        steps.push(Step::Send(vec![b'x'; 64 * 1024]));
    }
    steps.push(Step::Wait(hold.clone()));
    Reply::steps(steps)
}

#[tokio::test]
async fn an_event_past_the_limit_ends_the_stream_with_one_error_event() {
    let hold = Arc::new(Notify::new());
    let upstream = FakeUpstream::fixed(endless_line(&hold)).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_sse_event_bytes = LIMIT;
    config.titles.order = TitleOrder::Off;
    let app = TestApp::start(config).await;
    for harness in ["passthrough", "opencode"] {
        let response = app.chat(harness, &chat_body(true)).await;
        assert_eq!(response.status(), 200);
        let text = read_all(response).await;
        assert!(text.len() < LIMIT, "{harness}: {} bytes sent", text.len());
        assert!(text.starts_with(&text_chunk("before")), "{harness}");
        let lines = data_lines(&text);
        assert_eq!(lines.len(), 2, "{harness}: {text:.300}");
        let last: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(
            last["error"]["code"], "upstream_event_too_large",
            "{harness}"
        );
        assert_eq!(
            upstream
                .wait_for_drop(Duration::from_secs(5))
                .await
                .as_deref(),
            Some("/v1/chat/completions"),
            "{harness}: the upstream request was dropped"
        );
    }
    let response = app.chat("opencode", &chat_body(false)).await;
    let (status, code, _) = error_of(response).await;
    assert_eq!((status, code.as_str()), (502, "upstream_event_too_large"));
}
