//! The opencode harness through the real server: requests arrive upstream in opencode form, and the
//! client gets the shape it asked for (stream or one JSON, usage chunk only when asked).

use crate::support::sse::{
    DONE, USAGE_CHUNK, data_lines, finish_chunk, hello_stream, read_all, text_chunk,
};
use crate::support::{FakeUpstream, Reply, TestApp, test_config};
use serde_json::json;

fn hello_upstream() -> Reply {
    Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
}

fn agent_request(stream: bool) -> serde_json::Value {
    json!({
        "model": "mock-model",
        "stream": stream,
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "You are a helpful coding agent."},
            {"role": "user", "content": "Run the QA pass\nthen report"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}, "strict": true},
            {"type": "function", "name": "my_custom_tool", "function": {"name": "my_custom_tool", "parameters": {}}}
        ]
    })
}

#[tokio::test]
async fn streamed_request_arrives_in_opencode_form() {
    let upstream = FakeUpstream::fixed(hello_upstream()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .header("x-harness-cwd", "/home/user/project")
        .json(&agent_request(true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-harness"], "opencode");
    assert_eq!(
        response.headers()["x-harness-passthrough-tools"],
        "my_custom_tool"
    );
    let text = read_all(response).await;
    // Not asked for usage: the usage chunk is gone, everything else is byte-identical.
    let expected: String = hello_stream()
        .into_iter()
        .filter(|c| c != USAGE_CHUNK)
        .collect();
    assert_eq!(text, expected);

    let recorded = &upstream.main_requests()[0];
    assert_eq!(recorded.header("accept"), Some("text/event-stream"));
    assert_eq!(recorded.header("x-harness-cwd"), None);
    let body = recorded.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "max_tokens",
            "stream",
            "stream_options",
            "tool_choice",
            "messages",
            "tools",
            "temperature"
        ]
    );
    assert_eq!(body["max_tokens"], 32000);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["temperature"], 1);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are opencode"), "{system}");
    assert!(system.contains("\n<env>\n  Working directory: /home/user/project\n  Workspace root folder: /home/user/project\n  Is directory a git repo: yes\n  Platform: linux\n  Today's date: Sat Nov 29 2025\n</env>\n"));
    assert!(system.contains("<location>file:///home/user/project/%3Cbuilt-in%3E</location>"));
    // The fake upstream's host (127.0.0.1) is no known provider's.
    assert!(system.contains("You are powered by the model named mock-model. The exact model ID is openai-compatible/mock-model\n"));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "\"Run the QA pass\nthen report\""})
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["bash", "read", "my_custom_tool"],
        "canonical order, intersected with the client's tools, then the client's own kept"
    );
}

#[tokio::test]
async fn usage_chunk_is_kept_when_the_client_asks_for_it() {
    let upstream = FakeUpstream::fixed(hello_upstream()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut request = agent_request(true);
    request["stream_options"] = json!({"include_usage": true});
    let response = app.chat("opencode", &request).await;
    assert_eq!(read_all(response).await, hello_stream().concat());
}

#[tokio::test]
async fn non_streaming_client_gets_one_folded_completion() {
    let upstream = FakeUpstream::fixed(hello_upstream()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app.chat("opencode", &agent_request(false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "mock-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
        })
    );
    // The upstream was still asked to stream.
    assert_eq!(upstream.main_requests()[0].json()["stream"], true);
}

#[tokio::test]
async fn an_error_event_inside_the_stream_fails_a_non_streaming_request() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[
        &text_chunk("a"),
        "data: {\"error\":{\"message\":\"model overloaded\"}}\n\n",
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app.chat("opencode", &agent_request(false)).await;
    let (status, code, message) = crate::support::error_of(response).await;
    assert_eq!((status, code.as_str()), (502, "upstream_interrupted"));
    assert!(message.contains("model overloaded"), "{message}");
}

#[tokio::test]
async fn an_upstream_that_ignores_stream_true_still_streams_to_the_client() {
    let completion = json!({
        "id": "chatcmpl-2", "object": "chat.completion", "created": 3, "model": "mock-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    });
    let upstream = FakeUpstream::fixed(Reply::json(200, &completion.to_string())).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app.chat("opencode", &agent_request(true)).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let lines = data_lines(&read_all(response).await);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let chunk: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(chunk["choices"][0]["delta"]["content"], "Hi");
    assert_eq!(chunk["choices"][0]["finish_reason"], "stop");
    assert_eq!(lines[1], "[DONE]");

    // And a non-streaming client gets the JSON as it was.
    let response = app.chat("opencode", &agent_request(false)).await;
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body, completion);
}

#[tokio::test]
async fn opencode_is_the_default_harness() {
    let upstream =
        FakeUpstream::fixed(Reply::sse(&[&text_chunk("x"), &finish_chunk("stop"), DONE])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app
        .post("/v1/chat/completions")
        .json(&agent_request(true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-harness"], "opencode");
    read_all(response).await;
    let requests = upstream.main_requests();
    assert!(
        requests[0].json()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are opencode")
    );
}
