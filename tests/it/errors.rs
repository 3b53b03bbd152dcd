//! Every failure path answers an OpenAI-shaped error with the right status.

use std::time::Duration;

use crate::support::sse::{data_lines, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, chat_body, error_of, test_config};

#[tokio::test]
async fn unreachable_upstream_is_502() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let app = TestApp::start(test_config(&format!("http://127.0.0.1:{port}/v1"))).await;
    for harness in ["passthrough", "opencode"] {
        let response = app.chat(harness, &chat_body(true)).await;
        let (status, code, _) = error_of(response).await;
        assert_eq!(
            (status, code.as_str()),
            (502, "upstream_unreachable"),
            "{harness}"
        );
    }
}

#[tokio::test]
async fn upstream_silent_before_the_head_is_504() {
    let upstream = FakeUpstream::fixed(Reply::Hang).await;
    let mut config = test_config(&upstream.base_url());
    config.upstream.first_byte_timeout = Duration::from_millis(300);
    let app = TestApp::start(config).await;
    let response = app.chat("passthrough", &chat_body(true)).await;
    let (status, code, _) = error_of(response).await;
    assert_eq!((status, code.as_str()), (504, "upstream_timeout"));
}

#[tokio::test]
async fn a_cut_mid_stream_ends_with_one_error_event() {
    // The cut waits until the client has the first event: a head is committed by then.
    let cut = std::sync::Arc::new(tokio::sync::Notify::new());
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Send(text_chunk("partial").into_bytes()),
        Step::Send(b"data: {\"choices\":[{\"ind".to_vec()),
        Step::Wait(cut.clone()),
        Step::Cut,
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    // No title request: it would get this same script and take the cut's notification.
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    for harness in ["passthrough", "opencode"] {
        let mut response = app.chat(harness, &chat_body(true)).await;
        assert_eq!(response.status(), 200);
        let first = response.chunk().await.unwrap().unwrap();
        cut.notify_one();
        let text = String::from_utf8(first.to_vec()).unwrap() + &read_all(response).await;
        assert!(
            text.starts_with(&text_chunk("partial")),
            "{harness}: {text}"
        );
        let last = data_lines(&text).pop().unwrap();
        let event: serde_json::Value = serde_json::from_str(&last).expect("final event is JSON");
        assert_eq!(
            event["error"]["code"], "upstream_interrupted",
            "{harness}: {text}"
        );
        assert!(text.ends_with("\n\n"));
    }
}

#[tokio::test]
async fn idle_upstream_mid_stream_ends_with_a_timeout_event() {
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Send(text_chunk("a").into_bytes()),
        Step::Sleep(Duration::from_secs(30)),
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.upstream.idle_timeout = Duration::from_millis(300);
    let app = TestApp::start(config).await;
    let response = app.chat("passthrough", &chat_body(true)).await;
    let text = read_all(response).await;
    let last: serde_json::Value = serde_json::from_str(&data_lines(&text).pop().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_timeout");
}

#[tokio::test]
async fn client_disconnect_cancels_the_upstream_request() {
    let mut steps = vec![Step::Send(text_chunk("first").into_bytes())];
    for _ in 0..100 {
        steps.push(Step::Sleep(Duration::from_millis(50)));
        steps.push(Step::Send(text_chunk("more").into_bytes()));
    }
    let upstream = FakeUpstream::fixed(Reply::steps(steps)).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for harness in ["passthrough", "opencode"] {
        let mut response = app.chat(harness, &chat_body(true)).await;
        let first = response.chunk().await.unwrap().expect("a first chunk");
        assert!(!first.is_empty());
        let hung_up = std::time::Instant::now();
        drop(response);
        // Noticed at the next event (50 ms here); the bound leaves room for a busy machine.
        let dropped = upstream.wait_for_drop(Duration::from_secs(5)).await;
        eprintln!(
            "{harness}: upstream cancelled {:?} after the hang-up",
            hung_up.elapsed()
        );
        assert_eq!(
            dropped.as_deref(),
            Some("/v1/chat/completions"),
            "{harness}: upstream saw the hang-up"
        );
    }
}

#[tokio::test]
async fn unknown_harness_lists_the_known_ones() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app.chat("nope", &chat_body(false)).await;
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "unknown_harness"));
    assert!(
        message.contains("nope") && message.contains("opencode") && message.contains("passthrough"),
        "{message}"
    );
    let response = app
        .post("/harness/nope/v1/chat/completions")
        .json(&chat_body(false))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.1, "unknown_harness");
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn malformed_json_says_where() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .body("{\"model\": \"m\",\n \"messages\": [}")
        .send()
        .await
        .unwrap();
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "invalid_json"));
    assert!(message.contains("line 2"), "{message}");

    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .body(r#"{"model":"m","messages":"nope"}"#)
        .send()
        .await
        .unwrap();
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "invalid_request"));
    assert!(message.contains("messages"), "{message}");
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn oversize_bodies_are_413_with_or_without_content_length() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_body_bytes = 1024;
    let app = TestApp::start(config).await;
    let big = format!(
        "{{\"model\":\"m\",\"messages\":[],\"pad\":\"{}\"}}",
        "x".repeat(2000)
    );
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .body(big.clone())
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_of(response).await;
    assert_eq!((status, code.as_str()), (413, "request_too_large"));

    let chunked = reqwest::Body::wrap_stream(futures_util::stream::iter(
        big.into_bytes()
            .chunks(100)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    ));
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .body(chunked)
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_of(response).await;
    assert_eq!((status, code.as_str()), (413, "request_too_large"));
    assert_eq!(upstream.count(), 0);
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_is_405() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let (status, code, _) = error_of(app.get("/nowhere").send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (404, "not_found"));
    let (status, code, _) = error_of(app.get("/v1/chat/completions").send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
    let (status, code, _) = error_of(app.post("/healthz").send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
}
