//! `plain-chat`: the client's conversation, in whatever protocol it came, sent as a plain Chat
//! Completions request (`plain::chat_request`) — no system prompt, tools or parameters of another
//! client's — and its answer reshaped into the client's protocol. For clients that want the
//! protocol translation, conversation ids and titles without opencode's prompt.
//!
//! Its title request is as plain: the title prompt as the system message, the words as the user's.

use bytes::Bytes;
use http::HeaderMap;
use serde::Serialize;

use super::opencode::title::TitleRecogniser;
use super::{Harness, HarnessError, HarnessRequest, Prepared, TitleAsk};
use crate::conversation::Conversation;
use crate::conversation::mapping::{Reshape, ResponsePlan};
use crate::prompts::Prompts;

pub struct PlainChat {
    /// The title system prompt (`opencode/title.md`, the one title prompt the proxy has).
    title_prompt: String,
    /// Tells a client's own title request, forwarded as it is.
    titles: TitleRecogniser,
}

impl PlainChat {
    pub fn new(prompts: &Prompts) -> Self {
        Self {
            title_prompt: prompts.title.clone(),
            titles: TitleRecogniser::new(&prompts.title),
        }
    }
}

impl Harness for PlainChat {
    fn name(&self) -> &'static str {
        "plain-chat"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.titles.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let conversation = &request.conversation;
        if self.titles.is_title_request(conversation) {
            return Prepared::unchanged(&request);
        }
        // Always streamed, as every rewritten request: the answer is reshaped or folded for the
        // client either way.
        let chat = super::plain::chat_request(conversation, true);
        Ok(Prepared {
            upstream_body: super::sized(serde_json::to_vec(&chat).map_err(HarnessError::Encode)?)
                .into(),
            rewritten: true,
            response: ResponsePlan::Reshape(Reshape {
                client_stream: conversation.options.stream,
                include_usage: conversation.options.include_usage,
                calls: None,
                actions: None,
            }),
            dropped_tools: Vec::new(),
            passthrough_tools: Vec::new(),
            subagent: false,
            local: None,
        })
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        _headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        title_body(&self.title_prompt, ask)
    }
}

/// A plain title request: the title prompt as the system message, the words as the user's; no
/// headers of another client's. The title request of every harness whose agent asks for none.
pub fn title_body(title_prompt: &str, ask: &TitleAsk<'_>) -> Result<Bytes, HarnessError> {
    let body = TitleBody {
        model: ask.model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        messages: [
            TitleMessage {
                role: "system",
                content: title_prompt,
            },
            TitleMessage {
                role: "user",
                content: ask.words.text(),
            },
        ],
    };
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(HarnessError::Encode)
}

/// `title_body` as a Messages request, for a Messages upstream: the prompt as `system`, the
/// words as the user's turn, Anthropic's required token limit (a title is a few words).
pub fn title_body_messages(title_prompt: &str, ask: &TitleAsk<'_>) -> Result<Bytes, HarnessError> {
    let body = serde_json::json!({"model": ask.model, "max_tokens": TITLE_MAX_TOKENS,
        "system": title_prompt, "messages": [{"role": "user", "content": ask.words.text()}],
        "stream": true});
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(HarnessError::Encode)
}

/// The token limit of a Messages title request.
const TITLE_MAX_TOKENS: u32 = 1024;

#[derive(Serialize)]
struct TitleBody<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    messages: [TitleMessage<'a>; 2],
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct TitleMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_request_is_the_prompt_then_the_words() {
        let prompts = Prompts::load(None).expect("built-in prompts");
        let harness = PlainChat::new(&prompts);
        let mut headers = HeaderMap::new();
        let body = harness
            .title_request(
                &TitleAsk {
                    model: "m",
                    words: crate::harness::TitleWords::FirstUser("fix the \"login\" bug"),
                    conversation: "c1",
                },
                &mut headers,
            )
            .expect("a title body");
        let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            body,
            serde_json::json!({
                "model": "m",
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": prompts.title},
                    {"role": "user", "content": "fix the \"login\" bug"},
                ],
            })
        );
        assert!(headers.is_empty(), "no headers of another client's");
    }
}
