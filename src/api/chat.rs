//! Incoming Chat Completions request: every field real agents send is typed; anything else is kept
//! in `extra` so nothing the client sent is lost or re-keyed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::extra::deserialize_with_extra;

#[derive(Debug, Clone, Serialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// Whether the client asked for an SSE answer.
    pub fn wants_stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }

    /// Whether the client asked for the final usage chunk of a stream.
    pub fn wants_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StreamOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
    Function,
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `content` is a string or an array of typed parts.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Clone, Serialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ContentPart {
    /// Text of a text-bearing part (`text`, `input_text`, `output_text`); `None` for images/audio.
    pub fn text(&self) -> Option<&str> {
        match self.kind.as_str() {
            "text" | "input_text" | "output_text" | "" => self.text.as_deref(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub function: FunctionCall,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub arguments: Arguments,
}

/// Arguments are a JSON text per the spec; some clients send an object instead.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Arguments {
    Text(String),
    Json(Value),
}

impl Default for Arguments {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl Arguments {
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Text(text) => std::borrow::Cow::Borrowed(text),
            Self::Json(value) => std::borrow::Cow::Owned(value.to_string()),
        }
    }

    /// `as_text`, without copying a text the request already owns.
    pub fn into_text(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::Json(value) => value.to_string(),
        }
    }
}

/// A tool definition. Agents send `{"type":"function","function":{…}}`, sometimes with a top-level
/// `name`, `strict` or other keys; all are accepted.
#[derive(Debug, Clone, Serialize)]
pub struct ToolDef {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolDef {
    pub fn name(&self) -> Option<&str> {
        self.function
            .as_ref()
            .map(|f| f.name.as_str())
            .or(self.name.as_deref())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

// Read without `#[serde(flatten)]`'s buffering (`api::extra`); the wire keys as above.
deserialize_with_extra!(ChatRequest,
    required { model: "model", messages: "messages" }
    optional {
        stream: "stream", stream_options: "stream_options", tools: "tools",
        tool_choice: "tool_choice", temperature: "temperature", top_p: "top_p",
        max_tokens: "max_tokens", max_completion_tokens: "max_completion_tokens",
        reasoning_effort: "reasoning_effort", parallel_tool_calls: "parallel_tool_calls",
        user: "user",
    }
);
deserialize_with_extra!(StreamOptions, required {} optional { include_usage: "include_usage" });
deserialize_with_extra!(Message,
    required { role: "role" }
    optional { content: "content", name: "name", tool_calls: "tool_calls", tool_call_id: "tool_call_id" }
);
deserialize_with_extra!(ContentPart, required {} optional { kind: "type", text: "text" });
deserialize_with_extra!(ToolCall,
    required { function: "function" }
    optional { id: "id", kind: "type" }
);
deserialize_with_extra!(ToolDef, required {} optional { kind: "type", function: "function", name: "name" });
deserialize_with_extra!(FunctionDef,
    required { name: "name" }
    optional { description: "description", parameters: "parameters" }
);

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<ContentPart>> for Content {
    fn from(parts: Vec<ContentPart>) -> Self {
        Self::Parts(parts)
    }
}

/// A string, else an array of parts, read in one pass (`untagged` buffered it and tried each).
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::extra::text_or_list::<Self, ContentPart, D>(deserializer)
    }
}

/// A JSON text (a string), else whatever JSON the client sent, kept as it is.
impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::String(text) => Self::Text(text),
            other => Self::Json(other),
        })
    }
}
