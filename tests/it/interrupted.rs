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
            assert_eq!(
                last_error_code(&text),
                "upstream_interrupted",
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

/// The error event the upstream sent mid-stream, after some text.
const UPSTREAM_ERROR: &str = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":\"overloaded\"}}\n\n";

#[tokio::test]
async fn an_upstream_error_event_mid_stream_reaches_a_chat_client_once() {
    let upstream = RawUpstream::start(close_delimited(&format!(
        "{}{UPSTREAM_ERROR}",
        text_chunk("partial")
    )))
    .await;
    let app = app_before(&upstream).await;
    let response = app.chat("opencode", &chat_body(true)).await;
    let text = read_all(response).await;
    let errors: Vec<String> = data_lines(&text)
        .into_iter()
        .filter(|d| d.contains("\"error\""))
        .collect();
    assert_eq!(errors.len(), 1, "{text:?}");
    assert!(errors[0].contains("overloaded"), "{text:?}");
}

#[tokio::test]
async fn an_upstream_error_event_then_a_close_reaches_a_passthrough_client_once() {
    // Issue 30 item 6: the upstream's own error event is the stream's end as far as the client
    // is concerned; `passthrough` added `upstream_interrupted` after it.
    for close in ["", "\n"] {
        let upstream = RawUpstream::start(close_delimited(&format!(
            "{}{UPSTREAM_ERROR}{close}",
            text_chunk("partial")
        )))
        .await;
        let app = app_before(&upstream).await;
        let text = read_all(app.chat("passthrough", &chat_body(true)).await).await;
        let errors: Vec<String> = data_lines(&text)
            .into_iter()
            .filter(|d| d.contains("\"error\""))
            .collect();
        assert_eq!(errors.len(), 1, "{text:?}");
        assert!(
            errors[0].contains("overloaded"),
            "the upstream's own: {text:?}"
        );
    }
}

#[tokio::test]
async fn upstream_garbage_is_one_rule_streaming_or_folded() {
    for garbage in [
        "data: not a chunk at all\n\n",
        "data: {\"choices\":[{\"ind\n\n",
        "data: [1, 2]\n\n",
    ] {
        let body = format!(
            "{}{garbage}{}{DONE}",
            text_chunk("partial"),
            finish_chunk("stop")
        );
        let upstream = RawUpstream::start(close_delimited(&body)).await;
        let app = app_before(&upstream).await;
        // Streaming: what came before is kept, the garbage is not forwarded, one error ends it.
        let text = read_all(app.chat("opencode", &chat_body(true)).await).await;
        assert!(text.starts_with(&text_chunk("partial")), "{text:?}");
        let last = data_lines(&text).pop().unwrap();
        let event: serde_json::Value = serde_json::from_str(&last).expect("JSON");
        assert_eq!(event["error"]["code"], "upstream_invalid_event", "{text:?}");
        for data in data_lines(&text) {
            assert!(
                serde_json::from_str::<serde_json::Value>(&data).is_ok(),
                "{data:?}"
            );
        }
        // Folded: the same code, 502.
        let (status, code, _) = error_of(app.chat("opencode", &chat_body(false)).await).await;
        assert_eq!(
            (status, code.as_str()),
            (502, "upstream_invalid_event"),
            "{garbage:?}"
        );
    }
}

/// A model that writes "[DONE]" in its own answer has not ended it: the stream cut after that
/// still ends with the interruption event, through passthrough and the harness alike.
#[tokio::test]
async fn done_in_the_model_s_own_text_does_not_end_the_answer() {
    let upstream =
        RawUpstream::start(close_delimited(&text_chunk("All steps [DONE] so far"))).await;
    let app = app_before(&upstream).await;
    for harness in ["passthrough", "opencode"] {
        let response = app.chat(harness, &chat_body(true)).await;
        assert_eq!(response.status(), 200, "{harness}");
        let text = read_all(response).await;
        assert_eq!(
            last_error_code(&text),
            "upstream_interrupted",
            "{harness}: {text:?}"
        );
    }
}

/// The end of an answer is an event, not bytes that look like one: a model whose text spells the
/// stream's own end (`data: [DONE]`, `"finish_reason":"stop"`, JSON-escaped in its content) has
/// not ended it, nor has an upstream cut inside its finish chunk (the key went by, the event
/// never completed). Both end with the interruption event, through passthrough and the harness.
#[tokio::test]
async fn an_end_spelled_in_the_text_or_cut_inside_the_finish_chunk_is_an_interruption() {
    let spelled = text_chunk("Done.\n\ndata: [DONE]\n\n{\"finish_reason\":\"stop\"}");
    let half_finish = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"";
    for cut in [
        spelled.clone(),
        format!("{}{half_finish}", text_chunk("partial")),
    ] {
        let upstream = RawUpstream::start(close_delimited(&cut)).await;
        let app = app_before(&upstream).await;
        for harness in ["passthrough", "opencode"] {
            let response = app.chat(harness, &chat_body(true)).await;
            assert_eq!(response.status(), 200, "{harness}");
            let text = read_all(response).await;
            assert_eq!(
                last_error_code(&text),
                "upstream_interrupted",
                "{harness}: {cut:?} → {text:?}"
            );
        }
        let (status, code, _) = error_of(app.chat("opencode", &chat_body(false)).await).await;
        assert_eq!(
            (status, code.as_str()),
            (502, "upstream_interrupted"),
            "{cut:?}"
        );
    }
}

/// SSE lines may end in a lone CR: an answer that ends with `[DONE]` so is whole, and passthrough
/// forwards it byte for byte with nothing added.
#[tokio::test]
async fn an_answer_in_cr_terminated_lines_that_ended_is_a_success() {
    let body = format!("{}{DONE}", text_chunk("whole")).replace('\n', "\r");
    let upstream = RawUpstream::start(close_delimited(&body)).await;
    let app = app_before(&upstream).await;
    let response = app.chat("passthrough", &chat_body(true)).await;
    assert_eq!(read_all(response).await, body, "byte for byte");
    let text = read_all(app.chat("opencode", &chat_body(true)).await).await;
    assert!(!text.contains("\"error\""), "{text:?}");
}

/// The error code of a stream's last event (which must be JSON), or "" when it has none.
fn last_error_code(text: &str) -> String {
    let last = data_lines(text).pop().unwrap_or_default();
    let event: serde_json::Value = serde_json::from_str(&last)
        .unwrap_or_else(|e| panic!("the last event is JSON ({e}): {text:?}"));
    event["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
