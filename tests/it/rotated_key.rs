//! A key named by `upstream.api_key_env` is read from the injected environment, at start-up and
//! again after an upstream 401, so a rotated key is picked up without a restart — and without any
//! test touching the process environment. (The `api_key_file` twin is in `titles.rs`.)

use std::sync::{Arc, Mutex};

use crate::support::sse::{hello_stream, read_all};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, chat_body, test_config};
use harness_proxy::config::TitleOrder;

const VAR: &str = "TEST_UPSTREAM_KEY";

#[tokio::test]
async fn an_upstream_401_rereads_the_env_key_from_the_injected_source_and_retries_once() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.header("authorization") == Some("Bearer new-key") {
            let stream = hello_stream();
            Reply::sse(&stream.iter().map(String::as_str).collect::<Vec<_>>())
        } else {
            Reply::json(
                401,
                r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#,
            )
        }
    })
    .await;
    let key = Arc::new(Mutex::new("old-key".to_owned()));
    let env = {
        let key = key.clone();
        move |name: &str| (name == VAR).then(|| key.lock().unwrap().clone())
    };
    let mut config = test_config(&upstream.base_url());
    config.upstream.api_key_env = Some(VAR.to_owned());
    // Only the answer's requests reach the fake.
    config.titles.order = TitleOrder::Off;
    let app = TestApp::start_with_env(config, env).await;
    // The secret is rotated after start-up (surrounding whitespace is not part of a key).
    *key.lock().unwrap() = " new-key\n".to_owned();

    let response = app.chat("passthrough", &chat_body(true)).await;
    assert_eq!(response.status(), 200);
    let body = read_all(response).await;
    assert!(body.contains("[DONE]"), "{body}");
    let sent: Vec<Option<String>> = upstream
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        sent,
        [
            Some("Bearer old-key".to_owned()),
            Some("Bearer new-key".to_owned())
        ]
    );
}
