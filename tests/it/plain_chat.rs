//! The `plain-chat` harness through the real server: a client's conversation, in its own protocol,
//! reaches the Chat Completions upstream as a plain Chat Completions request (none of opencode's
//! prompt, tools, parameters or thread headers), its answer comes back in the client's protocol,
//! and its title request is as plain.

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

const TITLE_PROMPT: &str = include_str!("../../prompts/opencode/title.md");

#[tokio::test]
async fn a_messages_turn_goes_as_a_plain_chat_request_and_is_titled_plainly() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[&text_chunk("Create a file"), &finish_chunk("stop"), DONE])
        } else {
            Reply::sse(&[&text_chunk("Done."), &finish_chunk("stop"), DONE])
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.titles.harnesses = vec!["plain-chat".to_owned()];
    let app = TestApp::start(config).await;

    let response = app
        .post("/harness/plain-chat/v1/messages")
        .header("x-api-key", "sk-client")
        .header("anthropic-version", "2023-06-01")
        .json(&json!({
            "model": "mock-model",
            "max_tokens": 1000,
            "system": "Answer briefly.",
            "messages": [{"role": "user", "content": "Create the file notes.txt"}]
        }))
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-harness"], "plain-chat");
    let answer: Value = response.json().await.expect("an Anthropic message");
    assert_eq!(answer["type"], "message");
    assert_eq!(answer["content"][0]["text"], "Done.");

    let requests = upstream.wait_for_requests(2).await;
    let main = requests
        .iter()
        .find(|r| !r.is_title())
        .expect("the main request");
    assert_eq!(main.path, "/v1/chat/completions");
    assert_eq!(
        main.json(),
        json!({
            "model": "mock-model",
            "messages": [
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "Create the file notes.txt"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 1000
        }),
        "the conversation as it was, in Chat Completions"
    );
    for name in [
        "session-id",
        "thread-id",
        "x-client-request-id",
        "x-api-key",
    ] {
        assert_eq!(main.header(name), None, "no {name} upstream");
    }
    assert_eq!(main.header("authorization"), Some("Bearer sk-client"));

    let title = requests
        .iter()
        .find(|r| r.is_title())
        .expect("the title request");
    assert_eq!(
        title.json(),
        json!({
            "model": "mock-model",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": TITLE_PROMPT},
                {"role": "user", "content": "Create the file notes.txt"}
            ]
        })
    );
    assert_eq!(title.header("session-id"), None);
}
