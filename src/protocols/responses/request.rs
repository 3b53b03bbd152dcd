//! The OpenAI Responses request as clients send it (Codex CLI 0.95+ and the SDKs): every field
//! this front reads is typed; everything else lands in `extra` (or, inside an item, is skipped) and
//! is ignored. A `reasoning` item is kept whole, as JSON: it is the client's and is carried (its
//! summary and `encrypted_content` read by `input`). Wire shapes only: what they mean is `input`'s, `tools`' and `mod`'s business.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

#[derive(Debug)]
pub struct ResponsesRequest {
    pub model: String,
    pub input: Option<Input>,
    pub instructions: Option<String>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub reasoning: Option<Reasoning>,
    pub max_output_tokens: Option<u64>,
    pub stream: Option<bool>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Chat Completions has the same field; also the conversation id when no header names one.
    pub prompt_cache_key: Option<String>,
    pub previous_response_id: Option<String>,
    pub text: Option<TextOptions>,
    /// `include` (`reasoning.encrypted_content` is honoured), `store`, `client_metadata`, `user`, …
    /// accepted and otherwise not acted on.
    pub extra: Map<String, Value>,
}

/// `input`: one user text, or a list of items.
#[derive(Debug)]
pub enum Input {
    Text(String),
    Items(Vec<InputItem>),
}

// Read without `#[serde(flatten)]`, which buffered the whole body, every input item in it, before
// reading it (`api::extra`).
crate::api::extra::deserialize_with_extra!(ResponsesRequest,
    required { model: "model" }
    optional {
        input: "input", instructions: "instructions", tools: "tools", tool_choice: "tool_choice",
        parallel_tool_calls: "parallel_tool_calls", reasoning: "reasoning",
        max_output_tokens: "max_output_tokens", stream: "stream", temperature: "temperature",
        top_p: "top_p", prompt_cache_key: "prompt_cache_key",
        previous_response_id: "previous_response_id", text: "text",
    }
);

impl From<String> for Input {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<InputItem>> for Input {
    fn from(items: Vec<InputItem>) -> Self {
        Self::Items(items)
    }
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::api::extra::text_or_list::<Self, InputItem, D>(deserializer)
    }
}

impl From<String> for MessageContent {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Vec<Part>> for MessageContent {
    fn from(parts: Vec<Part>) -> Self {
        Self::Parts(parts)
    }
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::api::extra::text_or_list::<Self, Part, D>(deserializer)
    }
}

/// One input item: a `reasoning` item as the client sent it (id, summary, encrypted content: the
/// conversation carries it opaque), or any other kind, read through `Item`.
#[derive(Debug)]
pub enum InputItem {
    Reasoning(Value),
    Other(Item),
}

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read as JSON first so a reasoning item needs no second parse to be kept whole; any other
        // item is read out of that value into `Item` (its strings moved, not copied again).
        let value = Value::deserialize(deserializer)?;
        if value.get("type").and_then(Value::as_str) == Some("reasoning") {
            return Ok(Self::Reasoning(value));
        }
        Item::deserialize(value)
            .map(Self::Other)
            .map_err(serde::de::Error::custom)
    }
}

/// One input item other than reasoning. The item kinds share few fields, so one struct with optional
/// fields reads every kind; `kind` is absent on the short `{role, content}` message form. Fields no
/// kind needs here (`id`, `status`, …) are skipped.
#[derive(Debug, Default, Deserialize)]
pub struct Item {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub content: Option<MessageContent>,
    #[serde(default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// `function_call`: the arguments JSON text.
    #[serde(default)]
    pub arguments: Option<String>,
    /// `custom_tool_call`: the freeform input.
    #[serde(default)]
    pub input: Option<String>,
    /// `function_call_output` / `custom_tool_call_output`.
    #[serde(default)]
    pub output: Option<MessageContent>,
    /// `additional_tools`: tools offered inside the input (Codex 0.171 with its GPT-6 models
    /// offers all of its tools this way, none in `tools`).
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
}

/// Message content or a tool output: a string or a list of typed parts.
#[derive(Debug)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
pub struct Part {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
    /// `input_image`: a URL or a data URL (the Responses API puts it directly here).
    #[serde(default)]
    pub image_url: Option<Value>,
    #[serde(default)]
    pub detail: Option<String>,
    /// `input_image` / `input_file` by uploaded file: nothing this proxy can resolve.
    #[serde(default)]
    pub file_id: Option<String>,
}

/// A tool the client offers. `function` and `custom` carry a name; `namespace` groups functions;
/// anything else is a hosted tool (`web_search`, `file_search`, …).
#[derive(Debug, Clone, Deserialize)]
pub struct ToolSpec {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub strict: Option<bool>,
    /// `custom`: the input's grammar or format, if any.
    #[serde(default)]
    pub format: Option<Value>,
    /// `namespace`: its functions.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Deserialize)]
pub struct Reasoning {
    #[serde(default)]
    pub effort: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct TextOptions {
    #[serde(default)]
    pub format: Option<TextFormat>,
}

#[derive(Debug, Deserialize)]
pub struct TextFormat {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub schema: Option<Value>,
    #[serde(default)]
    pub strict: Option<bool>,
}
