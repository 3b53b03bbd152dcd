//! What an upstream's error answer says, whatever its shape: the one reader the fronts that
//! reshape an upstream's error (Messages, Gemini) share. OpenAI's `{"error": {"message"}}`, a
//! bare `{"message"}`, `{"error": "text"}`, or a body that is not JSON at all (an error page's
//! text); else that the upstream answered with this status. Pure.

use serde_json::Value;

/// The upstream's error body, parsed when it is JSON: what a front checks for its own shape
/// before it reshapes anything.
pub fn parsed(body: &[u8]) -> Option<Value> {
    serde_json::from_slice(body).ok()
}

/// The message of an upstream's error answer of `status`; `parsed` is `parsed(body)`.
pub fn message(status: u16, body: &[u8], parsed: Option<&Value>) -> String {
    parsed
        .and_then(|b| {
            b.pointer("/error/message")
                .or_else(|| b.get("message"))
                .or_else(|| b.get("error").filter(|e| e.is_string()))
        })
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            (!text.is_empty() && parsed.is_none()).then_some(text)
        })
        .unwrap_or_else(|| format!("the upstream answered {status}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(status: u16, body: &[u8]) -> String {
        message(status, body, parsed(body).as_ref())
    }

    #[test]
    fn every_shape_an_upstream_errs_in_gives_its_message() {
        let openai = br#"{"error":{"message":"slow down","type":"rate_limit_exceeded","param":null,"code":"x"}}"#;
        assert_eq!(read(429, openai), "slow down");
        assert_eq!(read(400, br#"{"message":"bad model"}"#), "bad model");
        assert_eq!(read(400, br#"{"error":"no such model"}"#), "no such model");
        assert_eq!(read(502, b"Bad Gateway\n"), "Bad Gateway");
        assert_eq!(read(500, b""), "the upstream answered 500");
        // JSON that says nothing readable is not shown as text.
        assert_eq!(read(503, br#"{"detail":1}"#), "the upstream answered 503");
    }
}
