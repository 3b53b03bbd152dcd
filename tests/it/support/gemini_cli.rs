//! What Gemini CLI puts in its history after a streamed answer: the model's parts but its
//! thoughts, then a `functionResponse` for each call (with the call's id, as the CLI echoes it).

use serde_json::{Value, json};

/// Appends the model turn of `events` (the answer's `GenerateContentResponse` chunks) to
/// `contents`, then a user turn answering each call with `output`.
pub fn echo_answer(events: &[Value], contents: &mut Vec<Value>, output: &str) {
    let parts: Vec<Value> = events
        .iter()
        .flat_map(|e| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|p| p["thought"] != true)
        .collect();
    let results: Vec<Value> = parts
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(|c| {
            json!({"functionResponse": {"id": c["id"], "name": c["name"],
                "response": {"output": output}}})
        })
        .collect();
    contents.push(json!({"role": "model", "parts": parts}));
    if !results.is_empty() {
        contents.push(json!({"role": "user", "parts": results}));
    }
}
