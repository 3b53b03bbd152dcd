//! The Gemini API's `GenerateContentRequest` as Gemini CLI and the `@google/genai` SDK send it
//! (docs/wire.md §5): every field the front reads typed, camelCase with the snake_case alias the
//! REST API also accepts. Unknown fields are ignored (never a 400); fields whose shape this front
//! does not read are `Value` so an odd one cannot fail the parse.
//!
//! Owns the wire shape only: no rule about what a field means (that is `convert`).

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    #[serde(default)]
    pub contents: Vec<Content>,
    #[serde(alias = "system_instruction")]
    pub system_instruction: Option<SystemInstruction>,
    #[serde(default)]
    pub tools: Vec<Tool>,
    #[serde(alias = "tool_config")]
    pub tool_config: Option<ToolConfig>,
    #[serde(alias = "generation_config")]
    pub generation_config: Option<GenerationConfig>,
}

/// `systemInstruction`: a `Content` (Gemini CLI: `{role: "user", parts: [{text}]}`), or a bare
/// string as some SDKs allow.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum SystemInstruction {
    Text(String),
    Content(Content),
}

#[derive(Debug, Default, Deserialize)]
pub struct Content {
    /// `user` or `model` (absent: `user`; `function`, from older SDKs, holds results).
    pub role: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    pub text: Option<String>,
    /// A thought summary the model produced (reasoning), echoed back.
    #[serde(default)]
    pub thought: bool,
    /// Gemini's own opaque reasoning token (or the CLI's `skip_thought_signature_validator`),
    /// meaningless to another model; read only when it is the proxy's (`convert::SIGNED_ID`).
    #[serde(alias = "thought_signature")]
    pub thought_signature: Option<Value>,
    #[serde(alias = "function_call")]
    pub function_call: Option<FunctionCall>,
    #[serde(alias = "function_response")]
    pub function_response: Option<FunctionResponse>,
    #[serde(alias = "inline_data")]
    pub inline_data: Option<Blob>,
    #[serde(alias = "file_data")]
    pub file_data: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct FunctionCall {
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    pub args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct FunctionResponse {
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    /// Gemini CLI: `{"output": text}` or `{"error": text}`; any object in general.
    pub response: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    #[serde(alias = "mime_type")]
    pub mime_type: String,
    /// Base64.
    #[serde(default)]
    pub data: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    #[serde(default, alias = "function_declarations")]
    pub function_declarations: Vec<FunctionDeclaration>,
    /// The other tool kinds (`googleSearch`, `codeExecution`, `urlContext`, …): Google's hosted
    /// tools, with no Chat Completions form.
    #[serde(flatten)]
    pub hosted: serde_json::Map<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    #[serde(default)]
    pub name: String,
    pub description: Option<String>,
    /// Google's OpenAPI subset (upper-case `type`), what older SDKs send.
    pub parameters: Option<Value>,
    /// JSON Schema as it is (Gemini CLI 0.61).
    #[serde(alias = "parameters_json_schema")]
    pub parameters_json_schema: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    #[serde(alias = "function_calling_config")]
    pub function_calling_config: Option<FunctionCallingConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCallingConfig {
    /// `AUTO`, `ANY`, `NONE` (`VALIDATED` reads as `AUTO`).
    pub mode: Option<String>,
    #[serde(default, alias = "allowed_function_names")]
    pub allowed_function_names: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    pub temperature: Option<f64>,
    #[serde(alias = "top_p")]
    pub top_p: Option<f64>,
    #[serde(alias = "max_output_tokens")]
    pub max_output_tokens: Option<u64>,
    #[serde(default, alias = "stop_sequences")]
    pub stop_sequences: Vec<String>,
    #[serde(alias = "response_mime_type")]
    pub response_mime_type: Option<String>,
    /// Google's OpenAPI subset.
    #[serde(alias = "response_schema")]
    pub response_schema: Option<Value>,
    /// JSON Schema as it is.
    #[serde(alias = "response_json_schema")]
    pub response_json_schema: Option<Value>,
    #[serde(alias = "thinking_config")]
    pub thinking_config: Option<ThinkingConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    #[serde(alias = "include_thoughts")]
    pub include_thoughts: Option<bool>,
    /// Tokens; `-1` lets the model decide, `0` turns thinking off.
    #[serde(alias = "thinking_budget")]
    pub thinking_budget: Option<i64>,
    /// `minimal`, `low`, `medium`, `high` (any case).
    #[serde(alias = "thinking_level")]
    pub thinking_level: Option<String>,
}
