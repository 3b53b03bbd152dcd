//! Canned SSE streams, and reading a streamed response chunk by chunk.

use std::time::Duration;

pub fn text_chunk(content: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
        serde_json::Value::String(content.to_owned())
    )
}

pub fn finish_chunk(reason: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\n"
    )
}

pub const USAGE_CHUNK: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\n";
pub const DONE: &str = "data: [DONE]\n\n";

/// A complete answer "Hello world" with usage, as an upstream streams it.
pub fn hello_stream() -> Vec<String> {
    vec![
        text_chunk("Hello"),
        text_chunk(" world"),
        finish_chunk("stop"),
        USAGE_CHUNK.to_owned(),
        DONE.to_owned(),
    ]
}

/// Reads the whole body as text, with a bound so a stuck stream fails the test.
pub async fn read_all(response: reqwest::Response) -> String {
    let bytes = tokio::time::timeout(Duration::from_secs(10), response.bytes())
        .await
        .expect("body within 10 s")
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("utf8 body")
}

/// The `data:` payloads of an SSE text.
pub fn data_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}
