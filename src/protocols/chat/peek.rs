//! A read-only look at a Chat Completions body that is forwarded untouched (`passthrough`):
//! borrowed strings, every field but the model, roles, text and call ids skipped — the message
//! views title facts need, without building the model.

use std::borrow::Cow;

use serde::Deserialize;

use crate::conversation::view::{MessageView, ViewRole};

/// A peeked body; `views` borrow from it.
#[derive(Deserialize)]
pub struct Peek<'a> {
    #[serde(borrow, default)]
    model: Cow<'a, str>,
    #[serde(borrow)]
    messages: Vec<PeekMessage<'a>>,
}

impl<'a> Peek<'a> {
    /// `None` when the body is not a Chat Completions request.
    pub fn parse(body: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }

    pub fn model(&self) -> String {
        self.model.clone().into_owned()
    }

    /// One view per message, as `Conversation::views` gives for the same body parsed in full.
    pub fn views(&self) -> impl Iterator<Item = MessageView<'_>> {
        self.messages.iter().map(|m| MessageView {
            role: match &*m.role {
                "system" => ViewRole::System,
                "developer" => ViewRole::Developer,
                "user" => ViewRole::User,
                "assistant" => ViewRole::Assistant,
                _ => ViewRole::Other,
            },
            parts: m
                .content
                .as_ref()
                .map(PeekContent::parts)
                .unwrap_or_default(),
            call_ids: m
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.id.as_deref())
                .collect(),
        })
    }
}

#[derive(Deserialize)]
struct PeekMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<PeekContent<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<PeekCall<'a>>>,
}

#[derive(Deserialize)]
struct PeekCall<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PeekContent<'a> {
    #[serde(borrow)]
    Text(Cow<'a, str>),
    #[serde(borrow)]
    Parts(Vec<PeekPart<'a>>),
}

#[derive(Deserialize)]
struct PeekPart<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl PeekContent<'_> {
    /// The text parts, as `Message::text_parts` sees them.
    fn parts(&self) -> Vec<&str> {
        match self {
            Self::Text(text) => vec![&**text],
            Self::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(&*p.kind, "text" | "input_text" | "output_text" | ""))
                .filter_map(|p| p.text.as_deref())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::chat::request::parse_conversation;
    use serde_json::json;

    /// The peek must see every shape of input as the full parse into the model does.
    #[test]
    fn peek_agrees_with_the_model() {
        let bodies = [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi \"there\"\n"}]}),
            json!({"model": "m", "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "input_text", "text": "b"}]}
            ]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": []}]}),
            json!({"model": "m", "messages": [{"role": "developer", "content": "d"}, {"role": "user"}]}),
            json!({"model": "m", "messages": [
                {"role": "user", "content": "example"},
                {"role": "assistant", "content": "example answer"},
                {"role": "user", "content": [{"type": "text", "text": "real"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
                {"role": "assistant", "content": "and", "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}, {"id": "call_3", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "two"}]},
                {"role": "assistant", "content": [{"type": "text", "text": " done "}]},
                {"role": "user", "content": "next"}
            ]}),
            json!({"model": "m", "messages": [
                {"role": "user", "content": "<system-reminder>\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nUse pnpm.\n</system-reminder>"},
                {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nx\n</system-reminder>"}, {"type": "text", "text": "Go"}]}
            ]}),
        ];
        for body in bodies {
            let bytes = serde_json::to_vec(&body).expect("json");
            let conversation = parse_conversation(&bytes).expect("parses");
            let peek = Peek::parse(&bytes).expect("peeks");
            assert_eq!(peek.model(), conversation.model, "{body}");
            assert_eq!(
                peek.views().collect::<Vec<_>>(),
                conversation.views(),
                "{body}"
            );
        }
        assert!(Peek::parse(b"not json").is_none());
    }
}
