//! Issue 8 item 6: an upstream that closes a non-chunked SSE answer mid-way (no `finish_reason`, no
//! `[DONE]`) interrupted it; that is not success. Streaming clients get one final
//! `upstream_interrupted` error event and never half an SSE line before it; folding clients a 502.

use crate::support::raw::RawUpstream;
use crate::support::sse::{DONE, data_lines, finish_chunk, read_all, text_chunk};
use crate::support::{TestApp, chat_body, error_of, test_config};
use harness_proxy::config::TitleOrder;

const HALF_LINE: &str = "data: {\"choices\":[{\"ind";

/// A close-delimited SSE answer: no length, not chunked, the body ends when the socket closes.
fn close_delimited(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}")
        .into_bytes()
}

async fn app_before(upstream: &RawUpstream) -> TestApp {
    let mut config = test_config(&upstream.base_url());
    config.titles.order = TitleOrder::Off;
    TestApp::start(config).await
}

#[tokio::test]
async fn a_close_mid_stream_ends_with_an_interruption_event_and_no_half_line() {
    for cut in [
        format!("{}{HALF_LINE}", text_chunk("partial")),
        text_chunk("partial"),
        format!("{}data: {{\"choices\":[]}}\n", text_chunk("partial")),
    ] {
        let upstream = RawUpstream::start(close_delimited(&cut)).await;
        let app = app_before(&upstream).await;
        for harness in ["passthrough", "opencode"] {
            let response = app.chat(harness, &chat_body(true)).await;
            assert_eq!(response.status(), 200, "{harness}");
            let text = read_all(response).await;
            assert!(
                text.starts_with(&text_chunk("partial")),
                "{harness}: {text:?}"
            );
            assert!(
                !text.contains("{\"ind\n"),
                "{harness}: half a line: {text:?}"
            );
            let last = data_lines(&text).pop().unwrap();
            let event: serde_json::Value = serde_json::from_str(&last)
                .unwrap_or_else(|e| panic!("{harness}: last event is JSON ({e}): {text:?}"));
            assert_eq!(
                event["error"]["code"], "upstream_interrupted",
                "{harness}: {text:?}"
            );
            assert!(text.ends_with("\n\n"), "{harness}: {text:?}");
            // Every event the client parses is JSON: nothing half-sent precedes the error.
            for data in data_lines(&text) {
                assert!(
                    serde_json::from_str::<serde_json::Value>(&data).is_ok(),
                    "{harness}: {data:?} in {text:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_close_mid_stream_is_a_502_for_a_client_that_does_not_stream() {
    for cut in [text_chunk("x"), format!("{}{HALF_LINE}", text_chunk("x"))] {
        let upstream = RawUpstream::start(close_delimited(&cut)).await;
        let app = app_before(&upstream).await;
        let response = app.chat("opencode", &chat_body(false)).await;
        let (status, code, _) = error_of(response).await;
        assert_eq!(
            (status, code.as_str()),
            (502, "upstream_interrupted"),
            "{cut:?}"
        );
    }
}

#[tokio::test]
async fn a_close_delimited_answer_that_finished_is_a_success() {
    for ending in [
        format!("{}{DONE}", finish_chunk("stop")),
        finish_chunk("stop"),
        DONE.to_owned(),
    ] {
        let body = format!("{}{ending}", text_chunk("whole"));
        let upstream = RawUpstream::start(close_delimited(&body)).await;
        let app = app_before(&upstream).await;
        let response = app.chat("passthrough", &chat_body(true)).await;
        assert_eq!(read_all(response).await, body, "byte for byte");
        let response = app.chat("opencode", &chat_body(true)).await;
        let text = read_all(response).await;
        assert!(!text.contains("\"error\""), "{text}");
        let response = app.chat("opencode", &chat_body(false)).await;
        assert_eq!(response.status(), 200);
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["choices"][0]["message"]["content"], "whole");
        assert_eq!(upstream.heads().len(), 3);
    }
}
