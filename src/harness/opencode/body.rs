//! The upstream body (docs/wire.md §1 "Body"), field order as opencode sends it, written
//! compactly by hand (`UpstreamBody::write`): serde_json escapes a string a byte at a time, and a
//! long history is mostly strings (`json_escape`). The tests hold the writer to the bytes
//! serde_json writes for the same types (their derived `Serialize`).

use std::io::Write as _;
use std::sync::Arc;

#[cfg(test)]
use serde::Serialize;
use serde_json::value::RawValue;

use crate::harness::shared_runs::Runs;
use crate::json_escape::{push_array, push_string};

#[derive(Debug)]
#[cfg_attr(test, derive(Serialize))]
pub struct UpstreamBody<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub tool_choice: Option<&'static str>,
    pub messages: Vec<OutMessage>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub tools: Option<Vec<std::borrow::Cow<'a, RawValue>>>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub temperature: Option<u8>,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub reasoning_effort: Option<&'a str>,
    /// Last, so the reference's fields keep their places (`opencode.prompt_cache_key`).
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub prompt_cache_key: Option<std::borrow::Cow<'a, str>>,
}

/// A JSON token shared with `system::EscapedPrefix`'s recent tokens, written as it is.
#[derive(Debug, Clone)]
pub struct SharedRaw(pub Arc<RawValue>);

#[cfg(test)]
impl Serialize for SharedRaw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[derive(Debug)]
#[cfg_attr(test, derive(Serialize))]
pub struct StreamOptions {
    pub include_usage: bool,
}

/// Messages as opencode shapes them: `{role, content}`, assistant with calls, tool result.
#[derive(Debug, Clone)]
#[cfg_attr(test, derive(Serialize), serde(untagged))]
pub enum OutMessage {
    Text {
        role: &'static str,
        content: String,
        /// An assistant message's reasoning (`opencode.reasoning = "return"`).
        #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
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
        #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    test,
    derive(Serialize),
    serde(tag = "type", rename_all = "snake_case")
)]
pub enum OutPart {
    Text { text: String },
    ImageUrl { image_url: OutImage },
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
pub struct OutImage {
    pub url: String,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
pub struct OutCall {
    #[cfg_attr(test, serde(rename = "type"))]
    pub kind: &'static str,
    pub id: String,
    pub function: OutFunction,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
pub struct OutFunction {
    pub name: String,
    pub arguments: String,
}

impl UpstreamBody<'_> {
    /// The body as compact JSON into `runs`: the bytes serde_json writes for it, the system
    /// prompt's kept token a run of its own (`Runs::share_token`).
    pub(crate) fn write(&self, runs: &mut Runs) {
        let out = runs.current();
        out.extend_from_slice(b"{\"model\":");
        push_string(out, self.model);
        push_number(out, b",\"max_tokens\":", self.max_tokens);
        out.extend_from_slice(if self.stream {
            b",\"stream\":true"
        } else {
            b",\"stream\":false"
        });
        out.extend_from_slice(if self.stream_options.include_usage {
            b",\"stream_options\":{\"include_usage\":true}"
        } else {
            b",\"stream_options\":{\"include_usage\":false}"
        });
        push_field(out, b",\"tool_choice\":", self.tool_choice);
        out.extend_from_slice(b",\"messages\":[");
        for (i, message) in self.messages.iter().enumerate() {
            if i > 0 {
                runs.current().push(b',');
            }
            message.write(runs);
        }
        let out = runs.current();
        out.push(b']');
        if let Some(tools) = &self.tools {
            out.extend_from_slice(b",\"tools\":");
            push_array(out, tools, |tool, out| {
                out.extend_from_slice(tool.get().as_bytes());
            });
        }
        if let Some(temperature) = self.temperature {
            push_number(out, b",\"temperature\":", temperature);
        }
        push_field(out, b",\"reasoning_effort\":", self.reasoning_effort);
        push_field(
            out,
            b",\"prompt_cache_key\":",
            self.prompt_cache_key.as_deref(),
        );
        out.push(b'}');
    }
}

impl OutMessage {
    fn write(&self, runs: &mut Runs) {
        let out = runs.current();
        match self {
            Self::Text {
                role,
                content,
                reasoning_content,
            } => push_turn(out, role, content, reasoning_content.as_deref()),
            Self::Parts { role, content } => {
                push_role(out, role);
                push_array(out, content, OutPart::write);
            }
            Self::Raw { role, content } => {
                push_role(out, role);
                runs.share_token(&content.0);
            }
            Self::Calls {
                role,
                content,
                reasoning_content,
                tool_calls,
            } => {
                push_turn(out, role, content, reasoning_content.as_deref());
                out.extend_from_slice(b",\"tool_calls\":");
                push_array(out, tool_calls, OutCall::write);
            }
            Self::ToolResult {
                role,
                content,
                tool_call_id,
            } => {
                push_role_and_content(out, role, content);
                push_field(out, b",\"tool_call_id\":", Some(tool_call_id));
            }
        }
        runs.current().push(b'}');
    }
}

impl OutPart {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Text { text } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                push_string(out, text);
            }
            Self::ImageUrl { image_url } => {
                out.extend_from_slice(b"{\"type\":\"image_url\",\"image_url\":{\"url\":");
                push_string(out, &image_url.url);
                out.push(b'}');
            }
        }
        out.push(b'}');
    }
}

impl OutCall {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":");
        push_string(out, self.kind);
        out.extend_from_slice(b",\"id\":");
        push_string(out, &self.id);
        out.extend_from_slice(b",\"function\":{\"name\":");
        push_string(out, &self.function.name);
        out.extend_from_slice(b",\"arguments\":");
        push_string(out, &self.function.arguments);
        out.extend_from_slice(b"}}");
    }
}

/// `{"role":…,"content":` (the content and the rest of the object to follow).
fn push_role(out: &mut Vec<u8>, role: &str) {
    out.extend_from_slice(b"{\"role\":");
    push_string(out, role);
    out.extend_from_slice(b",\"content\":");
}

/// `{"role":…,"content":…` (the object left open for what follows).
fn push_role_and_content(out: &mut Vec<u8>, role: &str, content: &str) {
    push_role(out, role);
    push_string(out, content);
}

/// `{"role":…,"content":…` and the reasoning, if any (the object left open for what follows).
fn push_turn(out: &mut Vec<u8>, role: &str, content: &str, reasoning: Option<&str>) {
    push_role_and_content(out, role, content);
    push_field(out, b",\"reasoning_content\":", reasoning);
}

/// `name` then `value` as a JSON string, when there is one (serde's `skip_serializing_if`).
fn push_field(out: &mut Vec<u8>, name: &[u8], value: Option<&str>) {
    if let Some(value) = value {
        out.extend_from_slice(name);
        push_string(out, value);
    }
}

fn push_number(out: &mut Vec<u8>, name: &[u8], value: impl Into<u64>) {
    out.extend_from_slice(name);
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{}", value.into());
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn raw(json: &str) -> Arc<RawValue> {
        Arc::from(RawValue::from_string(json.to_owned()).expect("JSON"))
    }

    fn written(body: &UpstreamBody<'_>) -> Vec<u8> {
        let mut runs = Runs::new(64, true);
        body.write(&mut runs);
        runs.finish().to_bytes().to_vec()
    }

    fn every_kind_of_message(text: &str) -> Vec<OutMessage> {
        let prompt =
            serde_json::to_string(&format!("You are opencode.\n{text}").repeat(200)).expect("JSON");
        vec![
            OutMessage::Raw {
                role: "system",
                content: SharedRaw(raw(&prompt)),
            },
            OutMessage::user(text.to_owned()),
            OutMessage::Parts {
                role: "user",
                content: vec![
                    OutPart::Text {
                        text: text.to_owned(),
                    },
                    OutPart::ImageUrl {
                        image_url: OutImage {
                            url: format!("data:image/png;base64,{text}"),
                        },
                    },
                ],
            },
            OutMessage::assistant(text.to_owned(), Some(format!("thinking {text}"))),
            OutMessage::assistant(String::new(), None),
            OutMessage::Calls {
                role: "assistant",
                content: String::new(),
                reasoning_content: None,
                tool_calls: vec![
                    OutCall {
                        kind: "function",
                        id: "call_1".to_owned(),
                        function: OutFunction {
                            name: "bash".to_owned(),
                            arguments: format!(r#"{{"command":{}}}"#, serde_json::json!(text)),
                        },
                    },
                    OutCall {
                        kind: "function",
                        id: format!("call_{text}"),
                        function: OutFunction {
                            name: "read".to_owned(),
                            arguments: "{}".to_owned(),
                        },
                    },
                ],
            },
            OutMessage::Calls {
                role: "assistant",
                content: text.to_owned(),
                reasoning_content: Some(text.to_owned()),
                tool_calls: Vec::new(),
            },
            OutMessage::ToolResult {
                role: "tool",
                content: text.to_owned(),
                tool_call_id: "call_1".to_owned(),
            },
        ]
    }

    #[test]
    fn the_writer_writes_serde_jsons_bytes_for_every_field_and_message() {
        let tools = [
            raw(r#"{"type":"function","function":{"name":"bash"}}"#),
            raw("{}"),
        ];
        for text in ["plain", "", "a \"quoted\"\n\ttab \\ é 😀 \u{1}\u{7f}"] {
            for full in [true, false] {
                let body = UpstreamBody {
                    model: text,
                    max_tokens: 32_000,
                    stream: full,
                    stream_options: StreamOptions {
                        include_usage: !full,
                    },
                    tool_choice: full.then_some("auto"),
                    messages: every_kind_of_message(text),
                    tools: full.then(|| tools.iter().map(|t| Cow::Borrowed(&**t)).collect()),
                    temperature: full.then_some(1),
                    reasoning_effort: full.then_some(text),
                    prompt_cache_key: full.then(|| Cow::Owned(format!("ses_{text}"))),
                };
                let want = serde_json::to_vec(&body).expect("JSON");
                assert_eq!(
                    String::from_utf8(written(&body)).expect("UTF-8"),
                    String::from_utf8(want).expect("UTF-8")
                );
            }
        }
    }

    #[test]
    fn the_system_prompt_goes_as_a_run_of_its_own() {
        let messages = every_kind_of_message("x");
        let token = messages[0].kept_token().expect("the system token").clone();
        let body = UpstreamBody {
            model: "m",
            max_tokens: 1,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tool_choice: None,
            messages,
            tools: None,
            temperature: None,
            reasoning_effort: None,
            prompt_cache_key: None,
        };
        let mut runs = Runs::new(64, true);
        body.write(&mut runs);
        let parts = runs.finish();
        assert_eq!(
            parts.parts().len(),
            3,
            "before the prompt, the prompt, after it"
        );
        assert_eq!(
            parts.parts()[1].as_ptr(),
            token.get().as_ptr(),
            "not copied"
        );
    }
}
