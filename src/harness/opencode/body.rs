//! The upstream body (docs/wire.md §1 "Body"), field order as opencode sends it. Serialized
//! compactly.

use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

#[derive(Debug, Serialize)]
pub struct UpstreamBody<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    pub messages: Vec<OutMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<std::borrow::Cow<'a, RawValue>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'a str>,
    /// Last, so the reference's fields keep their places (`opencode.prompt_cache_key`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<std::borrow::Cow<'a, str>>,
}

/// A JSON token shared with `system::EscapedPrefix`'s recent tokens, written as it is.
#[derive(Debug, Clone)]
pub struct SharedRaw(pub Arc<RawValue>);

impl Serialize for SharedRaw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[derive(Debug, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

/// Messages as opencode shapes them: `{role, content}`, assistant with calls, tool result.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum OutMessage {
    Text {
        role: &'static str,
        content: String,
        /// An assistant message's reasoning (`opencode.reasoning = "return"`).
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
    },
    /// A user message with images: its text (if any) then its images, as typed parts.
    Parts {
        role: &'static str,
        content: Vec<OutPart>,
    },
    /// Content already a JSON string token (the system message, escaped mostly ahead of time).
    Raw {
        role: &'static str,
        content: SharedRaw,
    },
    Calls {
        role: &'static str,
        content: String,
        /// The turn's reasoning, between the text and the calls (DeepSeek's thinking mode refuses
        /// an assistant message with calls but without it).
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        tool_calls: Vec<OutCall>,
    },
    ToolResult {
        role: &'static str,
        content: String,
        tool_call_id: String,
    },
}

impl OutMessage {
    /// The message's content when it is a token kept beyond this request (the system prompt's).
    pub fn kept_token(&self) -> Option<&Arc<RawValue>> {
        match self {
            Self::Raw { content, .. } => Some(&content.0),
            _ => None,
        }
    }

    /// About how many bytes this message takes in the upstream JSON (escapes aside), so the body
    /// buffer can be sized once instead of doubling through a large history.
    pub fn approx_len(&self) -> usize {
        const FRAMING: usize = 64;
        FRAMING
            + match self {
                Self::Text {
                    content,
                    reasoning_content,
                    ..
                } => content.len() + reasoning_content.as_ref().map_or(0, String::len),
                Self::Raw { content, .. } => content.0.get().len(),
                Self::Parts { content, .. } => content
                    .iter()
                    .map(|p| {
                        FRAMING
                            + match p {
                                OutPart::Text { text } => text.len(),
                                OutPart::ImageUrl { image_url } => image_url.url.len(),
                            }
                    })
                    .sum::<usize>(),
                Self::Calls {
                    content,
                    reasoning_content,
                    tool_calls,
                    ..
                } => {
                    content.len()
                        + reasoning_content.as_ref().map_or(0, String::len)
                        + tool_calls
                            .iter()
                            .map(|c| {
                                FRAMING
                                    + c.id.len()
                                    + c.function.name.len()
                                    + c.function.arguments.len()
                            })
                            .sum::<usize>()
                }
                Self::ToolResult {
                    content,
                    tool_call_id,
                    ..
                } => content.len() + tool_call_id.len(),
            }
    }

    pub fn user(content: String) -> Self {
        Self::Text {
            role: "user",
            content,
            reasoning_content: None,
        }
    }
    pub fn assistant(content: String, reasoning_content: Option<String>) -> Self {
        Self::Text {
            role: "assistant",
            content,
            reasoning_content,
        }
    }
}

/// One part of a user message with images, as opencode's OpenAI-compatible provider sends it:
/// `{"type":"text","text":…}`, `{"type":"image_url","image_url":{"url":…}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutPart {
    Text { text: String },
    ImageUrl { image_url: OutImage },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutImage {
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutCall {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub function: OutFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutFunction {
    pub name: String,
    pub arguments: String,
}
