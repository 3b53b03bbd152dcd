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

/// Asserts that `estimate` is within 10 % of the exact tokens of `sent` (the body the upstream
/// received) and that the client's own request (`client_side`) is another size, so the estimate
/// counted the rebuilt body. `label` names the estimate in the printed figures.
pub fn assert_counts_the_rebuilt_body(label: &str, estimate: f64, sent: &Value, client_side: f64) {
    let exact = exact_tokens(sent) as f64;
    let error = (estimate - exact).abs() / exact;
    eprintln!(
        "{label}: estimate {estimate}, exact {exact} ({:+.2} %), client's own {client_side}",
        (estimate - exact) / exact * 100.0
    );
    assert!(
        error < 0.10,
        "estimate {estimate}, exact {exact}: {:.1} %",
        error * 100.0
    );
    assert!(
        (client_side - exact).abs() / exact > 0.10,
        "the client's own request is another size: {client_side} vs {exact}"
    );
}
