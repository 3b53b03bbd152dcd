//! An upstream that ignored `stream: true` answered with one JSON completion; a streaming client
//! still gets events: one chunk per choice, the usage chunk if asked, then the `DONE` sentinel.

use bytes::Bytes;
use serde_json::{Value, json};

use super::end::done_event;
use crate::sse::data_event;

pub fn completion_to_sse(body: &[u8], include_usage: bool) -> Bytes {
    let mut out = Vec::new();
    let Ok(completion) = serde_json::from_slice::<Value>(body) else {
        // Not JSON after all: deliver it as one data event rather than lose it.
        out.extend_from_slice(&data_event(body));
        out.extend_from_slice(&done_event());
        return Bytes::from(out);
    };
    let head = |choices: Value| {
        json!({
            "id": completion.get("id").cloned().unwrap_or(Value::Null),
            "object": "chat.completion.chunk",
            "created": completion.get("created").cloned().unwrap_or(Value::Null),
            "model": completion.get("model").cloned().unwrap_or(Value::Null),
            "choices": choices,
        })
    };
    for choice in completion
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let message = choice.get("message").cloned().unwrap_or_else(|| json!({}));
        let mut delta = serde_json::Map::new();
        delta.insert(
            "role".into(),
            message
                .get("role")
                .cloned()
                .unwrap_or_else(|| json!("assistant")),
        );
        for key in ["content", "reasoning_content"] {
            if let Some(v) = message.get(key).filter(|v| !v.is_null()) {
                delta.insert(key.into(), v.clone());
            }
        }
        if let Some(Value::Array(calls)) = message.get("tool_calls") {
            let indexed: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    let mut call = call.clone();
                    if let Some(obj) = call.as_object_mut() {
                        obj.insert("index".into(), json!(i));
                    }
                    call
                })
                .collect();
            delta.insert("tool_calls".into(), Value::Array(indexed));
        }
        let chunk = head(json!([{
            "index": choice.get("index").cloned().unwrap_or(json!(0)),
            "delta": delta,
            "finish_reason": choice.get("finish_reason").cloned().unwrap_or(Value::Null),
        }]));
        out.extend_from_slice(&crate::sse::json_event(None, &chunk));
    }
    if include_usage && let Some(usage) = completion.get("usage").filter(|u| !u.is_null()) {
        let mut chunk = head(json!([]));
        if let Some(obj) = chunk.as_object_mut() {
            obj.insert("usage".into(), usage.clone());
        }
        out.extend_from_slice(&crate::sse::json_event(None, &chunk));
    }
    out.extend_from_slice(&done_event());
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::chat::Folder;

    #[test]
    fn folding_the_synthetic_stream_gives_the_completion_back() {
        let completion = json!({
            "id": "chatcmpl-9", "object": "chat.completion", "created": 5, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        });
        let sse = completion_to_sse(completion.to_string().as_bytes(), true);
        assert!(sse.ends_with(b"data: [DONE]\n\n"));
        let mut folder = Folder::new();
        folder.push(&sse).expect("valid stream");
        let folded = serde_json::to_value(folder.finish("x").expect("folds")).expect("json");
        assert_eq!(folded, completion);
    }

    #[test]
    fn usage_is_left_out_unless_asked() {
        let body = json!({"choices": [], "usage": {"total_tokens": 1}}).to_string();
        let sse = completion_to_sse(body.as_bytes(), false);
        assert_eq!(&sse[..], b"data: [DONE]\n\n");
    }
}
