//! The OpenAI error body `{"error":{"message","type","param","code"}}`.

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub error: ErrorDetail<'a>,
}

#[derive(Debug, Serialize)]
pub struct ErrorDetail<'a> {
    pub message: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub param: Option<&'a str>,
    pub code: &'a str,
}

impl ErrorBody<'_> {
    pub fn to_json(&self) -> String {
        // Serializing borrowed strings into a String cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| String::from(r#"{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}"#))
    }
}

/// One SSE event carrying an error, sent when the upstream fails after streaming began.
pub fn sse_error_event(message: &str, code: &str) -> String {
    let body = ErrorBody {
        error: ErrorDetail {
            message,
            kind: "server_error",
            param: None,
            code,
        },
    };
    format!("data: {}\n\n", body.to_json())
}
