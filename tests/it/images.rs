//! Images on every front (issue 19) through the real server: Anthropic `image` blocks (base64 and
//! URL) and images inside a `tool_result`, Responses `input_image`, Gemini `inlineData`, Chat
//! `image_url` parts reach
//! the upstream as Chat Completions `image_url` parts in opencode's form; images over
//! `limits.max_image_bytes` are a 413 in the client's own error shape. Expected upstream messages
//! are written by hand.

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

async fn upstream() -> FakeUpstream {
    let ok = Reply::sse(&[&text_chunk("ok"), &finish_chunk("stop"), DONE]);
    FakeUpstream::fixed(ok).await
}

async fn post(app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
    let response = app
        .post(path)
        .header("x-api-key", "sk-test")
        // Claude Code names itself (a protocol alone implies no client profile).
        .header("user-agent", "claude-cli/2.1.332 (external, sdk-cli)")
        .json(body)
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON answer"))
}

/// The upstream messages after the system one, of the one main request.
fn upstream_messages(upstream: &FakeUpstream) -> Vec<Value> {
    let requests: Vec<Recorded> = upstream.main_requests();
    assert_eq!(requests.len(), 1, "one main request");
    let mut messages = requests[0].json()["messages"]
        .as_array()
        .expect("messages")
        .clone();
    assert_eq!(messages.remove(0)["role"], "system");
    messages
}

#[tokio::test]
async fn claude_code_s_images_and_a_read_png_s_result_reach_the_upstream_as_image_url_parts() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({
        "model": "mock-model", "max_tokens": 1000, "stream": false,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What differs?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/r/shot.png"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "Read image (2KB)"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
                ]}
            ]}
        ],
        "tools": [{"name": "Read", "description": "Reads a file", "input_schema": {"type": "object",
            "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}]
    });
    let (status, answer) = post(&app, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        upstream_messages(&upstream),
        vec![
            json!({"role": "user", "content": [
                {"type": "text", "text": "\"What differs?\""},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}}
            ]}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "id": "toolu_1", "function": {"name": "read", "arguments": "{\"filePath\":\"/r/shot.png\"}"}}
            ]}),
            json!({"role": "tool", "content": "Read image (2KB)", "tool_call_id": "toolu_1"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
            ]}),
        ]
    );
}

#[tokio::test]
async fn a_responses_input_image_reaches_the_upstream_as_an_image_url_part() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({"model": "mock-model", "stream": false, "input": [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Describe"},
            {"type": "input_image", "image_url": "data:image/webp;base64,UklGRg==", "detail": "auto"}
        ]}
    ]});
    let (status, answer) = post(&app, "/v1/responses", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        upstream_messages(&upstream),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "\"Describe\""},
            {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}}
        ]})]
    );
}

#[tokio::test]
async fn a_chat_image_url_part_reaches_the_upstream() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({"model": "mock-model", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Describe"},
        {"type": "image_url", "image_url": {"url": "https://example.com/c.gif", "detail": "low"}}
    ]}]});
    let (status, answer) = post(&app, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        upstream_messages(&upstream),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "\"Describe\""},
            {"type": "image_url", "image_url": {"url": "https://example.com/c.gif"}}
        ]})]
    );
}

#[tokio::test]
async fn images_over_the_limit_are_a_413_in_each_client_s_shape() {
    let upstream = upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_image_bytes = 30;
    let app = TestApp::start(config).await;
    // 44 base64 characters: 33 bytes decoded, over 30; a URL image counts nothing.
    let data = format!("data:image/png;base64,{}", "A".repeat(44));
    let messages = json!({"model": "mock-model", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/huge.png"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A".repeat(44)}}
    ]}]});
    let (status, error) = post(&app, "/v1/messages", &messages).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["type"], "request_too_large", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.max_image_bytes")),
        "{error}"
    );
    let chat = json!({"model": "mock-model", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data}}
    ]}]});
    let (status, error) = post(&app, "/v1/chat/completions", &chat).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "images_too_large", "{error}");
    let responses = json!({"model": "mock-model", "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_image", "image_url": data}
    ]}]});
    let (status, error) = post(&app, "/v1/responses", &responses).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "images_too_large", "{error}");
    assert!(upstream.main_requests().is_empty());
    // At the limit exactly: served.
    let at_limit = json!({"model": "mock-model", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", "A".repeat(40))}}
    ]}]});
    let (status, answer) = post(&app, "/v1/chat/completions", &at_limit).await;
    assert_eq!(status, 200, "{answer}");
}

/// A data URL is one whatever the case of its scheme (RFC 2397 via RFC 3986: schemes are
/// case-insensitive) or of `;base64`, and a URL parser drops leading spaces: `DATA:` counts too
/// (issue 30 item 6: a 22 MiB image written `DATA:` went upstream).
#[tokio::test]
async fn an_upper_case_data_url_counts_against_max_image_bytes() {
    let upstream = upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_image_bytes = 30;
    let app = TestApp::start(config).await;
    for url in [
        format!("DATA:image/png;base64,{}", "A".repeat(44)),
        format!("Data:image/png;BASE64,{}", "A".repeat(44)),
        format!(" data:image/png;base64,{}", "A".repeat(44)),
    ] {
        let chat = json!({"model": "mock-model", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}
        ]}]});
        let (status, error) = post(&app, "/v1/chat/completions", &chat).await;
        assert_eq!(status, 413, "{url}: {error}");
        assert_eq!(error["error"]["code"], "images_too_large", "{error}");
    }
    assert!(upstream.main_requests().is_empty());
}

/// Gemini CLI's pasted image (`inlineData`) reaches the upstream as opencode's `image_url` part,
/// and one over the limit is a 413 in Google's error shape, nothing sent.
#[tokio::test]
async fn a_gemini_inline_image_reaches_the_upstream_and_one_too_large_is_a_413() {
    let upstream = upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_image_bytes = 30;
    let app = TestApp::start(config).await;
    let path = "/v1beta/models/gemini-2.5-pro:generateContent";
    let body = |data: String| {
        json!({"contents": [{"role": "user", "parts": [
            {"text": "What is on it?"},
            {"inlineData": {"mimeType": "image/png", "data": data}}
        ]}]})
    };
    let (status, error) = post(&app, path, &body("A".repeat(44))).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], 413, "{error}");
    assert!(error["error"]["status"].is_string(), "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.max_image_bytes")),
        "{error}"
    );
    assert!(upstream.main_requests().is_empty());

    let (status, answer) = post(&app, path, &body("iVBORw0KGgo=".to_owned())).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        upstream_messages(&upstream),
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "\"What is on it?\""},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ]})]
    );
}

#[tokio::test]
async fn a_responses_image_by_file_id_is_a_clear_400() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({"model": "mock-model", "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_image", "file_id": "file-abc"}
    ]}]});
    let (status, error) = post(&app, "/v1/responses", &body).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        error["error"]["code"], "image_file_id_unsupported",
        "{error}"
    );
    assert!(upstream.main_requests().is_empty());
}
