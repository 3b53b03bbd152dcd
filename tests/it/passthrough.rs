//! `passthrough`: request and response bytes go through untouched, streaming or not.

use std::time::Duration;

use crate::support::sse::{DONE, data_lines, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, test_config};

/// A body with odd spacing, key order and unicode: any re-encoding would change its bytes.
const ODD_BODY: &str = "{\"stream\":true, \"model\" :\"mock-model\",\"messages\":[{\"content\":\"h\\u00e9llo \u{1F600}\\n\",\"role\":\"user\"}],\"zz_unknown\":{\"b\":1,\"a\":2}}";

#[tokio::test]
async fn request_and_sse_response_are_byte_identical() {
    // Chunk boundaries fall inside events and inside a multi-byte character.
    let stream = hello_stream().concat();
    let emoji = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\u{1F600}\"}}]}\n\n";
    let full = format!("{emoji}{stream}");
    let bytes = full.as_bytes();
    let cuts = [3, emoji.len() - 8, emoji.len() + 5, emoji.len() + 100];
    let mut steps = Vec::new();
    let mut prev = 0;
    for cut in cuts {
        steps.push(Step::Send(bytes[prev..cut].to_vec()));
        steps.push(Step::Sleep(Duration::from_millis(5)));
        prev = cut;
    }
    steps.push(Step::Send(bytes[prev..].to_vec()));
    let upstream = FakeUpstream::fixed(Reply::steps(steps)).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;

    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .body(ODD_BODY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-harness"], "passthrough");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = read_all(response).await;
    assert_eq!(text, full);

    let recorded = upstream.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].body.as_ref(), ODD_BODY.as_bytes());
}

#[tokio::test]
async fn non_streaming_json_is_byte_identical_and_headers_are_filtered() {
    let answer = "{\"id\":\"chatcmpl-x\",  \"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";
    let upstream = FakeUpstream::fixed(Reply::Full {
        status: 200,
        content_type: "application/json",
        body: answer.as_bytes().to_vec(),
        headers: vec![
            ("x-upstream-trace", "abc".into()),
            ("openai-processing-ms", "12".into()),
        ],
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .header("x-custom-client", "kept")
        .header("x-harness-cwd", "/never/forwarded")
        .body(r#"{"model":"m","messages":[]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-upstream-trace"], "abc");
    assert_eq!(response.headers()["openai-processing-ms"], "12");
    assert_eq!(response.text().await.unwrap(), answer);
    let recorded = &upstream.requests()[0];
    assert_eq!(recorded.header("x-custom-client"), Some("kept"));
    assert_eq!(
        recorded.header("x-harness"),
        None,
        "our control headers stay with us"
    );
    assert_eq!(recorded.header("x-harness-cwd"), None);
}

#[tokio::test]
async fn upstream_4xx_and_5xx_pass_through_with_their_bodies() {
    for (status, body) in [
        (
            400u16,
            r#"{"error":{"message":"bad model","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#,
        ),
        (
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit","param":null,"code":null}}"#,
        ),
        (
            500,
            r#"{"error":{"message":"boom","type":"server_error","param":null,"code":null}}"#,
        ),
    ] {
        let upstream = FakeUpstream::fixed(Reply::json(status, body)).await;
        let app = TestApp::start(test_config(&upstream.base_url())).await;
        for harness in ["passthrough", "opencode"] {
            let response = app.chat(harness, &crate::support::chat_body(true)).await;
            assert_eq!(response.status().as_u16(), status, "{harness}");
            assert_eq!(response.text().await.unwrap(), body, "{harness}");
        }
    }
}

#[tokio::test]
async fn models_and_other_v1_routes_are_forwarded() {
    let models = r#"{"object":"list","data":[{"id":"mock-model","object":"model"}]}"#;
    let upstream = FakeUpstream::fixed(Reply::json(200, models)).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;

    let response = app.get("/v1/models").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), models);

    let response = app
        .get("/harness/opencode/v1/models?limit=2")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let response = app
        .post("/v1/embeddings")
        .body(r#"{"input":"x","model":"e"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let recorded = upstream.requests();
    assert_eq!(recorded[0].method, "GET");
    assert_eq!(recorded[0].path, "/v1/models");
    assert_eq!(recorded[1].path, "/v1/models?limit=2");
    assert_eq!(recorded[2].path, "/v1/embeddings");
    assert_eq!(recorded[2].body.as_ref(), br#"{"input":"x","model":"e"}"#);
}

#[tokio::test]
async fn upstream_key_replaces_the_client_key_else_the_client_key_is_forwarded() {
    let upstream = FakeUpstream::fixed(Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    app.post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .bearer_auth("client-key")
        .body("{}")
        .send()
        .await
        .unwrap();

    let mut config = test_config(&upstream.base_url());
    config.upstream.api_key = Some("sk-upstream".into());
    let keyed = TestApp::start(config).await;
    keyed
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .bearer_auth("client-key")
        .body("{}")
        .send()
        .await
        .unwrap();

    let recorded = upstream.requests();
    assert_eq!(
        recorded[0].header("authorization"),
        Some("Bearer client-key")
    );
    assert_eq!(
        recorded[1].header("authorization"),
        Some("Bearer sk-upstream")
    );
}

#[tokio::test]
async fn retries_a_503_before_anything_reached_the_client() {
    let upstream = FakeUpstream::queue(vec![
        Reply::Full {
            status: 503,
            content_type: "application/json",
            body: b"{}".to_vec(),
            headers: vec![("retry-after", "0".into())],
        },
        Reply::sse(&[&text_chunk("ok"), DONE]),
    ])
    .await;
    let mut config = test_config(&upstream.base_url());
    config.upstream.max_retries = 2;
    let app = TestApp::start(config).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "passthrough")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = read_all(response).await;
    assert_eq!(data_lines(&text).last().map(String::as_str), Some("[DONE]"));
    assert_eq!(upstream.count(), 2);
}
