//! Harness selection (header > path > default), request ids, health.

use crate::support::sse::{hello_stream, read_all};
use crate::support::{FakeUpstream, Reply, TestApp, chat_body, test_config};

#[tokio::test]
async fn harness_comes_from_header_then_path_then_default() {
    let upstream = FakeUpstream::fixed(Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.default_harness = "passthrough".into();
    let app = TestApp::start(config).await;
    let body = serde_json::to_vec(&chat_body(true)).unwrap();

    let cases = [
        ("/v1/chat/completions", None, "passthrough"),
        ("/v1/chat/completions", Some("opencode"), "opencode"),
        ("/harness/opencode/v1/chat/completions", None, "opencode"),
        (
            "/harness/opencode/v1/chat/completions",
            Some("passthrough"),
            "passthrough",
        ),
    ];
    for (i, (path, header, expected)) in cases.iter().enumerate() {
        let mut request = app.post(path).body(body.clone());
        if let Some(h) = header {
            request = request.header("x-harness", *h);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.headers()["x-harness"],
            *expected,
            "{path} {header:?}"
        );
        read_all(response).await;
        let recorded = &upstream.main_requests()[i];
        assert_eq!(recorded.path, "/v1/chat/completions");
        // Passthrough forwards the bytes; opencode rebuilds the body.
        assert_eq!(
            recorded.body.as_ref() == body.as_slice(),
            *expected == "passthrough",
            "{path} {header:?}"
        );
    }
}

#[tokio::test]
async fn request_id_round_trips_and_is_generated_when_absent() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .header("x-request-id", "req-abc-123")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-abc-123");
    let response2 = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .body("{}")
        .send()
        .await
        .unwrap();
    let generated = response2.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(generated.len(), 36, "a UUID: {generated}");
    let recorded = upstream.requests();
    assert_eq!(recorded[0].header("x-request-id"), Some("req-abc-123"));
    assert_eq!(recorded[1].header("x-request-id"), Some(generated.as_str()));
    // Errors carry it too.
    let response = app
        .get("/nowhere")
        .header("x-request-id", "r-404")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "r-404");
}

#[tokio::test]
async fn health_and_readiness() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    assert_eq!(app.get("/healthz").send().await.unwrap().status(), 200);
    let ready = app.get("/readyz").send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let metrics = app.get("/metrics").send().await.unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
}
