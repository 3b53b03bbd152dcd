//! Google's error shape `{"error":{"code","message","status"}}`: the status name for an HTTP
//! status, the body for the proxy's own errors (rendered once by `routes::gemini::GeminiError`),
//! an upstream's error body reshaped into it, and the error that ends a stream.
//!
//! Pure. Why a stream's error is bare JSON, not an SSE event: docs/wire.md §5.

use serde_json::{Value, json};

use crate::protocols::upstream_error;

/// Google's status name (`google.rpc.Code`) for an HTTP status.
pub fn status_name(status: u16) -> &'static str {
    match status {
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        426 => "FAILED_PRECONDITION",
        429 => "RESOURCE_EXHAUSTED",
        408 | 504 => "DEADLINE_EXCEEDED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        502 | 503 => "UNAVAILABLE",
        400..=499 => "INVALID_ARGUMENT",
        _ => "INTERNAL",
    }
}

/// The error body for `status` with `message`.
pub fn body(status: u16, message: &str) -> String {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
        .to_string()
}

/// An upstream's error body in Google's shape for `status`, keeping its message
/// (`protocols::upstream_error`); one already in Google's shape stays.
pub fn reshape(status: u16, raw: &[u8]) -> Vec<u8> {
    let parsed = upstream_error::parsed(raw);
    let google = parsed.as_ref().is_some_and(|b| {
        b.pointer("/error/code").is_some_and(Value::is_u64)
            && b.pointer("/error/status").is_some_and(Value::is_string)
    });
    if google && let Some(parsed) = &parsed {
        return parsed.to_string().into_bytes();
    }
    let message = upstream_error::message(status, raw, parsed.as_ref());
    body(status, &message).into_bytes()
}

/// The HTTP status an error met mid-stream is reported with, from its code.
pub fn status_for_code(code: &str) -> u16 {
    if code.contains("rate_limit") {
        429
    } else if code.contains("overloaded") || code.contains("interrupted") {
        503
    } else if code.contains("timeout") {
        504
    } else {
        500
    }
}

/// The error that ends a stream: bare JSON on a line of its own, which the `@google/genai` SDK
/// throws as an `ApiError` (a `data:` event holding it would read as an empty answer).
pub fn stream_error(code: &str, message: &str) -> String {
    format!("{}\n", body(status_for_code(code), message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_errors_take_googles_shape_with_their_message() {
        let openai =
            br#"{"error":{"message":"slow down","type":"rate_limit_exceeded","code":"x"}}"#;
        let out: Value = serde_json::from_slice(&reshape(429, openai)).expect("json");
        assert_eq!(
            out,
            json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
        );
        let out: Value = serde_json::from_slice(&reshape(502, b"Bad Gateway")).expect("json");
        assert_eq!(out["error"]["message"], "Bad Gateway");
        assert_eq!(out["error"]["status"], "UNAVAILABLE");
        let google = br#"{"error":{"code":400,"message":"m","status":"INVALID_ARGUMENT"}}"#;
        let out: Value = serde_json::from_slice(&reshape(400, google)).expect("json");
        assert_eq!(out["error"]["message"], "m");
    }

    #[test]
    fn statuses_have_googles_names() {
        for (status, name) in [
            (400, "INVALID_ARGUMENT"),
            (401, "UNAUTHENTICATED"),
            (403, "PERMISSION_DENIED"),
            (404, "NOT_FOUND"),
            (413, "INVALID_ARGUMENT"),
            (429, "RESOURCE_EXHAUSTED"),
            (500, "INTERNAL"),
            (503, "UNAVAILABLE"),
        ] {
            assert_eq!(status_name(status), name, "{status}");
        }
    }
}
