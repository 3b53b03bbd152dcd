//! Chat Completions response shapes: the streamed `chat.completion.chunk` and the folded
//! `chat.completion`. Unknown fields are kept in `extra` so a re-emitted chunk loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::text::Text;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Chunk {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Delta {
    /// Text of `content` given as a string, an array of `{text}` parts or one `{text}` object.
    pub fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ToolCallDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// The non-streaming answer, as folded from a stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Completion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Completion {
    /// The bytes of its text, reasoning and call arguments: what its JSON is mostly made of.
    pub fn text_bytes(&self) -> usize {
        self.choices
            .iter()
            .map(|c| {
                let m = &c.message;
                m.content.as_ref().map_or(0, Text::len)
                    + m.reasoning_content.as_ref().map_or(0, Text::len)
                    + m.tool_calls.as_ref().map_or(0, |calls| {
                        calls.iter().map(|t| t.function.arguments.len()).sum()
                    })
            })
            .sum()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub message: CompletionMessage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionMessage {
    pub role: String,
    /// Held in pieces as it was folded (`text::Text`): a whole answer's text is never copied to
    /// grow.
    pub content: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<CompletedToolCall>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletedToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: CompletedFunction,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletedFunction {
    pub name: String,
    pub arguments: String,
}
