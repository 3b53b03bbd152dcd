//! The exact input tokens of an upstream body, to measure the local `count_tokens` estimates
//! (Messages, Gemini) against what the upstream then received.

use serde_json::Value;

/// The input tokens of a Chat Completions body the upstream received, counted exactly with the
/// estimator's tokenizer (o200k): every message's text and calls, every tool's JSON, 4 a message.
pub fn exact_tokens(body: &Value) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let mut total = 0;
    for message in body["messages"].as_array().unwrap() {
        total += 4;
        match &message["content"] {
            Value::String(text) => total += count(text),
            Value::Array(parts) => {
                for part in parts {
                    total += part["text"].as_str().map_or(0, count);
                }
            }
            _ => {}
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            total += count(call["function"]["name"].as_str().unwrap())
                + count(call["function"]["arguments"].as_str().unwrap());
        }
    }
    for tool in body["tools"].as_array().into_iter().flatten() {
        total += 8 + count(&tool["function"].to_string());
    }
    total
}
