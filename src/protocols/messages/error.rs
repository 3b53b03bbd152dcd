//! Anthropic's error shape `{"type":"error","error":{"type","message"}}`: the error type for a
//! status, the body for the proxy's own errors (`body_for`, rendered once by
//! `routes::messages::AnthropicError`), an upstream's error body reshaped into it, and the
//! `error` event that ends a stream (`stream_error`: the renderer's, and passthrough's). Pure.

use serde_json::{Value, json};

use crate::protocols::upstream_error;

/// Anthropic's error type for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The error type for an error met mid-stream, from its code.
pub fn error_type_for_code(code: &str) -> &'static str {
    if code.contains("rate_limit") {
        "rate_limit_error"
    } else if code.contains("overloaded") {
        "overloaded_error"
    } else {
        "api_error"
    }
}

/// Whether a body already has Anthropic's error shape (a Messages upstream's, passed through).
pub fn is_anthropic_error(body: &Value) -> bool {
    body.get("type").and_then(Value::as_str) == Some("error") && body.get("error").is_some()
}

/// An error body in Anthropic's shape for `status`, keeping the message of the original body
/// (`protocols::upstream_error`); one already in Anthropic's shape stays.
pub fn reshape(status: u16, body: &[u8]) -> Vec<u8> {
    let parsed = upstream_error::parsed(body);
    if let Some(parsed) = parsed.as_ref().filter(|b| is_anthropic_error(b)) {
        return parsed.to_string().into_bytes();
    }
    let message = upstream_error::message(status, body, parsed.as_ref());
    body_for(error_type(status), &message).into_bytes()
}

/// The `error` event that ends a stream which failed after its head: `error` named as Anthropic's
/// stream does, its data the error object.
pub fn stream_error(code: &str, message: &str) -> String {
    format!(
        "event: error\ndata: {}\n\n",
        body_for(error_type_for_code(code), message)
    )
}

pub fn body_for(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_errors_take_anthropic_shape_with_their_message() {
        let openai = br#"{"error":{"message":"slow down","type":"rate_limit_exceeded","param":null,"code":"rate_limited"}}"#;
        let out: Value = serde_json::from_slice(&reshape(429, openai)).expect("json");
        assert_eq!(
            out,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
        );
        let out: Value = serde_json::from_slice(&reshape(502, b"Bad Gateway")).expect("json");
        assert_eq!(
            out,
            json!({"type": "error", "error": {"type": "api_error", "message": "Bad Gateway"}})
        );
        let out: Value = serde_json::from_slice(&reshape(500, b"")).expect("json");
        assert_eq!(out["error"]["message"], "the upstream answered 500");
    }

    #[test]
    fn anthropic_errors_pass_unchanged() {
        let body = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let out: Value =
            serde_json::from_slice(&reshape(529, body.to_string().as_bytes())).expect("json");
        assert_eq!(out, body);
    }

    #[test]
    fn statuses_map_to_the_documented_types() {
        for (status, kind) in [
            (400, "invalid_request_error"),
            (401, "authentication_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
            (405, "invalid_request_error"),
            (413, "request_too_large"),
            (429, "rate_limit_error"),
            (500, "api_error"),
            (502, "api_error"),
            (529, "overloaded_error"),
        ] {
            assert_eq!(error_type(status), kind, "{status}");
        }
    }
}
