//! Claude Code's own title request on a Messages upstream (the spec's claude-code title request): the session's
//! first words in `<session>` tags, the billing line (kind `title`), the SDK line and the title
//! prompt as system blocks with no cache marks, no tools, a JSON-schema answer format, and its
//! headers (the structured-outputs beta instead of the effort one). Its answer's `title` is the
//! record's title (`titles` reads it). Pure.

use http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::model;
use crate::harness::HarnessError;

/// The title request's body for `words` (the conversation's first user words), `model` titling.
pub fn body(
    model_name: &str,
    words: &str,
    sdk: &str,
    prompt: &str,
    session: &str,
) -> Result<Vec<u8>, HarnessError> {
    let session_text = format!("<session>\n{}\n</session>", words.trim_end_matches('\n'));
    let body = json!({"model": model_name,
        "messages": [{"role": "user", "content": [{"type": "text", "text": session_text}]}],
        "system": [
            {"type": "text", "text": model::billing_line("title", model_name, &session_text)},
            {"type": "text", "text": sdk},
            {"type": "text", "text": prompt},
        ],
        "tools": [],
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object",
            "properties": {"title": {"type": "string"}}, "required": ["title"],
            "additionalProperties": false}}},
        "metadata": {"user_id": model::user_id(&model::session_id(session))},
        "temperature": 1, "max_tokens": 32000, "stream": true});
    serde_json::to_vec(&body).map_err(HarnessError::Encode)
}

/// The beta list of the title request.
pub fn add_beta(headers: &mut HeaderMap, bare: bool) {
    let beta = if bare {
        "interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05,structured-outputs-2025-12-15"
    } else {
        "interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05,advisor-tool-2026-03-01,structured-outputs-2025-12-15"
    };
    headers.insert("anthropic-beta", HeaderValue::from_static(beta));
}
