//! The input tokens of a Chat Completions body, by the same local estimate as the Messages
//! front's `count_tokens` (`messages::tokens`): what a translated `count_tokens` answers once the
//! harness has rebuilt the request, so the count is of what the upstream will read (opencode's
//! system prompt and tools, not the client's).

use serde_json::Value;

use crate::protocols::messages::tokens::{PER_IMAGE, PER_MESSAGE, PER_TOOL, count};

/// The estimated input tokens of `body`; 0 for a body that is not a JSON object.
pub fn estimate(body: &[u8]) -> usize {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return 0;
    };
    let messages = body["messages"].as_array().map_or(0, |messages| {
        messages.iter().map(message_tokens).sum::<usize>()
    });
    let tools = body["tools"].as_array().map_or(0, |tools| {
        tools
            .iter()
            .map(|tool| PER_TOOL + count(&tool["function"].to_string()))
            .sum::<usize>()
    });
    messages + tools
}

fn message_tokens(message: &Value) -> usize {
    let content = match &message["content"] {
        Value::String(text) => count(text),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match part["type"].as_str() {
                Some("text") => part["text"].as_str().map_or(0, count),
                Some("image_url") => PER_IMAGE,
                _ => count(&part.to_string()),
            })
            .sum(),
        _ => 0,
    };
    let reasoning = message["reasoning_content"].as_str().map_or(0, count);
    let calls = message["tool_calls"].as_array().map_or(0, |calls| {
        calls
            .iter()
            .map(|call| {
                let function = &call["function"];
                function["name"].as_str().map_or(0, count)
                    + function["arguments"].as_str().map_or(0, count)
            })
            .sum()
    });
    PER_MESSAGE + content + reasoning + calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_calls_images_and_tools_are_counted() {
        let body = serde_json::json!({
            "messages": [
                {"role": "system", "content": "You are opencode."},
                {"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "a.txt"}
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
        });
        let tokens = estimate(body.to_string().as_bytes());
        assert!(tokens > 4 * PER_MESSAGE + PER_IMAGE + PER_TOOL, "{tokens}");
        assert!(
            tokens < 4 * PER_MESSAGE + PER_IMAGE + PER_TOOL + 60,
            "{tokens}"
        );
        assert_eq!(estimate(b"not json"), 0);
    }
}
