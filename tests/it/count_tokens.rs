//! Gemini's `:countTokens` counts what the upstream will read (issue 19, item 4): through a
//! rewriting harness the count is of the rebuilt Chat Completions body (opencode's system prompt
//! and tools, not the client's), as the Messages front's `count_tokens` is
//! (`messages::count_tokens_is_within_ten_percent_of_the_rebuilt_upstream_body`).

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, read_all, text_chunk};
use crate::support::tokens::assert_counts_the_rebuilt_body;
use crate::support::{FakeUpstream, Reply, TestApp, test_config};

const MODEL_PATH: &str = "/v1beta/models/gemini-2.5-flash";

async fn post(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.post(path)
        .header("x-goog-api-key", "AIza-count")
        .header(
            "user-agent",
            "GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64)",
        )
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn counted(app: &TestApp, path: &str, body: &Value) -> f64 {
    let response = post(app, path, body).await;
    assert_eq!(response.status(), 200, "{path}");
    let body: Value = response.json().await.unwrap();
    body["totalTokens"].as_u64().expect("a count") as f64
}

/// A Gemini CLI turn (a long system instruction, its tools, a tool round trip) is counted within
/// 10 % of the exact count of the body the upstream then received; the client's own request,
/// which the old count measured, is far from it.
#[tokio::test]
async fn count_tokens_is_within_ten_percent_of_the_rebuilt_upstream_body() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[
        &text_chunk("ok"),
        &finish_chunk("stop"),
        DONE,
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let system =
        "You are Gemini CLI, an interactive CLI agent specializing in software engineering. "
            .repeat(300);
    let call = json!({"id": "call_1", "name": "run_shell_command",
        "args": {"command": "printf 'roses\\n' > notes.txt", "description": "Write the poem"}});
    let request = json!({
        "contents": [
            {"role": "user", "parts": [{"text": "Create the file notes.txt with a short poem"}]},
            {"role": "model", "parts": [{"functionCall": call}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "call_1",
                "name": "run_shell_command", "response": {"output": ""}}}]}
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": system}]},
        "tools": [{"functionDeclarations": [
            {"name": "run_shell_command", "description": "Executes a given shell command.",
                "parametersJsonSchema": {"type": "object", "properties": {
                    "command": {"type": "string"}, "description": {"type": "string"}},
                    "required": ["command"]}},
            {"name": "write_file", "description": "Writes content to a file.",
                "parametersJsonSchema": {"type": "object", "properties": {
                    "file_path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["file_path", "content"]}}
        ]}]
    });
    let mut wrapped = json!({"generateContentRequest": request.clone()});
    wrapped["generateContentRequest"]["model"] = json!("models/gemini-2.5-flash");
    let estimate = counted(&app, &format!("{MODEL_PATH}:countTokens"), &wrapped).await;
    let client_side = counted(
        &app,
        &format!("/harness/passthrough{MODEL_PATH}:countTokens"),
        &wrapped,
    )
    .await;
    let response = post(
        &app,
        &format!("{MODEL_PATH}:streamGenerateContent?alt=sse"),
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    read_all(response).await;
    let sent = upstream
        .main_requests()
        .pop()
        .expect("the turn went upstream")
        .json();
    assert_counts_the_rebuilt_body(":countTokens", estimate, &sent, client_side);
    assert_eq!(upstream.main_requests().len(), 1, "counted locally");
}
