//! A Messages upstream (`upstream.wire = "messages"`, an Anthropic-compatible server): what is
//! sent (path under the server's root, `x-api-key`, `anthropic-version`), passthrough's bytes,
//! a 529 retried before the first byte, and harnesses without a Messages form refused at
//! start-up and per request, in the client's shape.

use harness_proxy::config::{Config, Wire};
use harness_proxy::state::{AppState, Host};
use serde_json::json;

use crate::support::anthropic::{self, root};
use crate::support::sse::read_all;
use crate::support::{FakeUpstream, TestApp, error_of, test_config};

/// A proxy in front of the fake Anthropic server, `passthrough` its default harness.
fn config(fake: &FakeUpstream) -> Config {
    let mut config = test_config(&root(fake));
    config.upstream.wire = Wire::Messages;
    config.default_harness = "passthrough".to_owned();
    config
}

fn messages_body() -> serde_json::Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test]
async fn passthrough_forwards_the_messages_bytes_to_the_root_s_v1_messages() {
    let fake = FakeUpstream::fixed(anthropic::text("Hello there.")).await;
    let app = TestApp::start(config(&fake)).await;
    let body = messages_body().to_string();
    let response = app
        .post("/v1/messages?beta=true")
        .header("x-api-key", "client-key")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = read_all(response).await;
    assert!(text.starts_with("event: message_start\n"), "{text}");
    assert!(
        text.contains("\"text\":\"there.\""),
        "Anthropic's events as they came: {text}"
    );

    let recorded = fake.requests();
    assert_eq!(recorded[0].path, "/v1/messages?beta=true");
    assert_eq!(recorded[0].body.as_ref(), body.as_bytes());
    assert_eq!(recorded[0].header("x-api-key"), Some("client-key"));
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded[0].header("authorization"), None);
}

#[tokio::test]
async fn a_configured_key_goes_in_x_api_key_and_replaces_the_client_s() {
    let fake = FakeUpstream::fixed(anthropic::text("Hi.")).await;
    let mut config = config(&fake);
    config.upstream.api_key = Some("server-key".to_owned());
    let app = TestApp::start(config).await;
    let response = app
        .post("/v1/messages")
        .header("x-api-key", "client-key")
        .header("anthropic-version", "2023-01-01")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let recorded = fake.requests();
    let keys: Vec<_> = recorded[0].headers.get_all("x-api-key").iter().collect();
    assert_eq!(keys, ["server-key"]);
    assert_eq!(recorded[0].header("authorization"), None);
    // The client's own version is its to choose.
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-01-01"));
}

#[tokio::test]
async fn an_overloaded_529_is_retried_before_anything_reached_the_client() {
    let fake = FakeUpstream::queue(vec![anthropic::overloaded(), anthropic::text("Back.")]).await;
    let mut config = config(&fake);
    config.upstream.max_retries = 1;
    let app = TestApp::start(config).await;
    let response = app
        .post("/v1/messages")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(read_all(response).await.contains("\"text\":\"ck.\""));
    assert_eq!(fake.count(), 2);
}

#[test]
fn a_default_harness_without_a_messages_form_stops_start_up_naming_it() {
    let mut config = Config::default();
    config.upstream.wire = Wire::Messages;
    config.titles.store = harness_proxy::config::StoreUrl::Memory;
    let err = AppState::build(config, Host::bare())
        .err()
        .expect("refused");
    let message = err.to_string();
    assert!(message.contains("upstream.wire"), "{message}");
    assert!(message.contains("harness `opencode`"), "{message}");
    assert!(
        message.contains("passthrough"),
        "the harnesses that can: {message}"
    );
}

#[tokio::test]
async fn a_request_for_a_harness_without_a_messages_form_is_refused_in_the_client_s_shape() {
    let fake = FakeUpstream::fixed(anthropic::text("never")).await;
    let app = TestApp::start(config(&fake)).await;
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let response = app.chat("pi", &chat).await;
    let (status, code, message) = error_of(response).await;
    assert_eq!((status, code.as_str()), (400, "harness_wire_unsupported"));
    assert!(message.contains("harness `pi`"), "{message}");

    let response = app
        .post("/v1/messages")
        .header("x-harness", "opencode")
        .json(&messages_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("harness `opencode`")
    );
    assert_eq!(fake.count(), 0);
}
