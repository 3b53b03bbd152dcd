//! An answer the proxy gives on the client's side, without the upstream: a harness's `Prepared`
//! holds a call in the client's own tool (`clients::subagent::LocalCall`: Codex's `wait_agent`
//! after its `spawn_agent`), and the turn's answer is that call, as a Chat Completions stream the
//! client's renderer reads like any upstream's.
//!
//! Owns: writing that stream. Must not: decide when to answer locally (the client's dialect does).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

use crate::clients::subagent::LocalCall;
use crate::upstream::UpstreamResponse;

/// `call` as the whole answer of model `model`: one chunk with the call, one with its finish.
pub fn answer(call: &LocalCall, model: &str) -> UpstreamResponse {
    let id = format!("chatcmpl-{}", call.id);
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let call_delta = json!({
        "role": "assistant",
        "tool_calls": [{
            "index": 0,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }],
    });
    let text = [
        chunk(call_delta, None),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    UpstreamResponse {
        status: StatusCode::OK,
        headers,
        body: Box::pin(futures_util::stream::iter([Ok(Bytes::from(text))])),
    }
}
