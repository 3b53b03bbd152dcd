//! The title request body (docs/wire.md §2): title prompt, fixed user line, quoted user text.

use serde::Serialize;

use crate::clients::quote::quote_prompt;

/// The fixed instruction line sent before the user's text.
pub const TITLE_USER_LINE: &str = "Generate a title for this conversation:\n";

#[derive(Serialize)]
struct TitleBody<'a> {
    model: &'a str,
    max_tokens: u32,
    temperature: u8,
    stream: bool,
    stream_options: StreamOptions,
    messages: [Message<'a>; 3],
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: std::borrow::Cow<'a, str>,
}

/// The compact JSON body of the title request for `first_user_text`.
pub fn title_body(model: &str, title_prompt: &str, first_user_text: &str) -> Vec<u8> {
    let body = TitleBody {
        model,
        max_tokens: 32_000,
        temperature: 1,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        messages: [
            Message {
                role: "system",
                content: title_prompt.into(),
            },
            Message {
                role: "user",
                content: TITLE_USER_LINE.into(),
            },
            Message {
                role: "user",
                content: quote_prompt(first_user_text).into(),
            },
        ],
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_matches_the_spec_layout() {
        let body = String::from_utf8(title_body(
            "mock-model",
            "PROMPT\n",
            "Run the QA pass\nthen report",
        ))
        .expect("utf8");
        assert_eq!(
            body,
            concat!(
                r#"{"model":"mock-model","max_tokens":32000,"temperature":1,"stream":true,"#,
                r#""stream_options":{"include_usage":true},"messages":[{"role":"system","content":"PROMPT\n"},"#,
                r#"{"role":"user","content":"Generate a title for this conversation:\n"},"#,
                r#"{"role":"user","content":"\"Run the QA pass\nthen report\""}]}"#
            )
        );
    }
}
