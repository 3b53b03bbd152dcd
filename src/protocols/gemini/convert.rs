//! A Gemini `GenerateContentRequest` → the conversation model, directly.
//!
//! Owns every Gemini-to-model rule: `systemInstruction` becomes the system message; a `model`
//! turn becomes its reasoning (`thought` parts, never text), its text and its calls; a `user`
//! turn its tool results (`functionResponse`) and its text and images in the order they came.
//! Gemini CLI often sends calls without an id: such a call gets a deterministic one from its
//! place in the history (`gemini_call_{turn}_{part}`), the same on every turn, and a result
//! finds its call by id, else by order and name among the calls still unanswered.
//! `tools[].functionDeclarations` become functions (Google's schema subset converted), other tool
//! kinds are dropped and reported; `toolConfig` and `generationConfig` fill the options.
//! Must not know any harness or client-dialect rule, nor Chat Completions wire types.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::request::{
    Content as InContent, FunctionCallingConfig, FunctionResponse, GenerateContentRequest,
    GenerationConfig, Part as InPart, SystemInstruction, ThinkingConfig, Tool,
};
use super::schema::to_json_schema;
use crate::conversation::{
    CallInput, ClientInfo, Content, Conversation, FunctionTool, Image, Item, Message, Options,
    Part, Reasoning, ResponseFormat, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};

/// The conversation, and the hosted tools that have no Chat Completions form.
pub struct Converted {
    pub conversation: Conversation,
    pub dropped_tools: Vec<String>,
}

impl GenerateContentRequest {
    /// The model of this request; `model` and `stream` come from the path.
    pub fn into_conversation(self, model: String, stream: bool) -> Converted {
        let mut items = Vec::with_capacity(self.contents.len() + 1);
        if let Some(system) = self.system_instruction.as_ref().map(system_text)
            && !system.is_empty()
        {
            items.push(Item::Message(Message::text(Role::System, system)));
        }
        let mut calls = Calls::default();
        for (turn, content) in self.contents.iter().enumerate() {
            push_content(turn, content, &mut calls, &mut items);
        }
        let (tools, dropped_tools) = convert_tools(&self.tools);
        let config = self.generation_config.unwrap_or_default();
        let options = Options {
            stream,
            // Gemini always reports usage.
            include_usage: true,
            temperature: config.temperature,
            top_p: config.top_p,
            max_output_tokens: config.max_output_tokens,
            reasoning_effort: config.thinking_config.as_ref().and_then(effort),
            tool_choice: self
                .tool_config
                .and_then(|c| c.function_calling_config)
                .and_then(|c| tool_choice(&c)),
            parallel_tool_calls: None,
            response_format: response_format(&config),
            stop: config.stop_sequences,
            extra: Map::new(),
        };
        Converted {
            conversation: Conversation {
                model,
                items,
                tools,
                options,
                client: ClientInfo::default(),
            },
            dropped_tools,
        }
    }
}

/// Whether the client asked to see the model's thoughts (`thinkingConfig.includeThoughts`).
pub fn includes_thoughts(request: &GenerateContentRequest) -> bool {
    request
        .generation_config
        .as_ref()
        .and_then(|c| c.thinking_config.as_ref())
        .and_then(|t| t.include_thoughts)
        .unwrap_or(false)
}

fn system_text(system: &SystemInstruction) -> String {
    match system {
        SystemInstruction::Text(text) => text.clone(),
        SystemInstruction::Content(content) => content
            .parts
            .iter()
            .filter(|p| !p.thought)
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The calls of the history not answered yet, oldest first: where a result without an id finds
/// its call.
#[derive(Default)]
struct Calls {
    open: VecDeque<(String, String)>,
}

impl Calls {
    /// The id of the call `response` answers: its own id when a call has it, else the oldest
    /// unanswered call of the same name, else the oldest unanswered call; a result matching no
    /// call keeps its id (or gets one from its place).
    fn answer(&mut self, response: &FunctionResponse, place: String) -> String {
        let by_id = response
            .id
            .as_deref()
            .and_then(|id| self.open.iter().position(|(open, _)| open == id));
        let at = by_id
            .or_else(|| {
                self.open
                    .iter()
                    .position(|(_, name)| *name == response.name)
            })
            .or_else(|| (response.id.is_none() && !self.open.is_empty()).then_some(0));
        match at.and_then(|at| self.open.remove(at)) {
            Some((id, _)) => id,
            None => response.id.clone().unwrap_or(place),
        }
    }
}

fn push_content(turn: usize, content: &InContent, calls: &mut Calls, out: &mut Vec<Item>) {
    match content.role.as_deref() {
        Some("model" | "assistant") => model_items(turn, &content.parts, calls, out),
        _ => user_items(turn, &content.parts, calls, out),
    }
}

/// The turn's reasoning first, then its text as one message (even an empty one: it ends an
/// exchange), then its calls, which must stay right after their message.
fn model_items(turn: usize, parts: &[InPart], calls: &mut Calls, out: &mut Vec<Item>) {
    // Results answer the model turn right before them: calls left unanswered earlier are not
    // matched any more.
    calls.open.clear();
    let mut thoughts = String::new();
    let mut text = String::new();
    let mut made = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if let Some(call) = &part.function_call {
            let id = call
                .id
                .clone()
                .filter(|id| !id.is_empty())
                .or_else(|| signed_id(part))
                .unwrap_or_else(|| place_id(turn, index));
            calls.open.push_back((id.clone(), call.name.clone()));
            let args = call
                .args
                .as_ref()
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            made.push(Item::ToolCall(ToolCall {
                id: Some(id),
                name: call.name.clone(),
                input: CallInput::Arguments(args),
            }));
        } else if let Some(piece) = &part.text {
            if part.thought {
                thoughts.push_str(piece);
            } else {
                text.push_str(piece);
            }
        }
    }
    if !thoughts.is_empty() {
        out.push(Item::Reasoning(Reasoning {
            text: thoughts,
            ..Reasoning::default()
        }));
    }
    out.push(Item::Message(Message::text(Role::Assistant, text)));
    out.extend(made);
}

/// Results in the order they came, each ending the text and images before it; thoughts dropped.
fn user_items(turn: usize, parts: &[InPart], calls: &mut Calls, out: &mut Vec<Item>) {
    let mut pending: Vec<Part> = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if let Some(response) = &part.function_response {
            flush_user(&mut pending, out);
            let call_id = calls.answer(response, place_id(turn, index));
            out.push(Item::ToolResult(tool_result(call_id, response)));
        } else if part.thought {
        } else if let Some(text) = &part.text {
            pending.push(Part::Text(text.clone()));
        } else if let Some(blob) = &part.inline_data {
            pending.push(Part::Image(Image {
                url: format!("data:{};base64,{}", blob.mime_type, blob.data),
                detail: None,
            }));
        } else if let Some(file) = &part.file_data {
            pending.push(Part::Other(json!({ "fileData": file })));
        }
    }
    flush_user(&mut pending, out);
}

/// The user's parts so far as one message: one text part as a string (as the CLI means it).
fn flush_user(pending: &mut Vec<Part>, out: &mut Vec<Item>) {
    let content = match std::mem::take(pending).as_slice() {
        [] => return,
        [Part::Text(text)] => Content::Text(text.clone()),
        parts => Content::Parts(parts.to_vec()),
    };
    out.push(Item::Message(Message {
        role: Role::User,
        content,
    }));
}

/// What the renderer signs into a call part's `thoughtSignature`, before the call's id: clients
/// that drop `functionCall.id` from their history (pi's Google client) keep the signature, which
/// Google's SDKs must echo, so the call keeps the id the upstream gave it (and with it its
/// conversation's anchor and its remembered reasoning). The signature goes as standard base64,
/// as Google's own are: pi's client drops one that is not valid base64.
pub const SIGNED_ID: &str = "hpcall1.";

/// A call part's `thoughtSignature` for the call `id`.
pub fn signature_of(id: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{SIGNED_ID}{id}"))
}

/// The call id a signature of ours carries (`signature_of`); any other signature is the model's
/// own and carries none. The unencoded form of earlier builds is read too.
fn signed_id(part: &InPart) -> Option<String> {
    use base64::Engine;
    let signature = part.thought_signature.as_ref()?.as_str()?;
    if signature.len() > 512 {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(signature)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    decoded
        .as_deref()
        .unwrap_or(signature)
        .strip_prefix(SIGNED_ID)
        .filter(|id| !id.is_empty() && id.len() <= 256)
        .map(str::to_owned)
}

/// A call id from the call's place in the history: the same on every turn that resends it.
fn place_id(turn: usize, part: usize) -> String {
    format!("gemini_call_{turn}_{part}")
}

/// Gemini CLI's `{"output": text}` as the text, `{"error": text}` as a failed result, any other
/// response as its JSON.
fn tool_result(call_id: String, response: &FunctionResponse) -> ToolResult {
    let value = response.response.as_ref();
    let text_of = |key: &str| value.and_then(|v| v.get(key)).and_then(Value::as_str);
    let (text, is_error) = match (text_of("output"), text_of("error")) {
        (Some(output), _) => (output.to_owned(), false),
        (None, Some(error)) => (error.to_owned(), true),
        (None, None) => (value.map_or_else(String::new, Value::to_string), false),
    };
    ToolResult {
        call_id: Some(call_id),
        content: Content::Text(text),
        is_error,
    }
}

/// Function declarations become functions (the JSON Schema given, else the Google schema
/// converted, else an empty object); hosted tools are reported by their kind.
fn convert_tools(tools: &[Tool]) -> (Vec<ToolDefinition>, Vec<String>) {
    let mut out = Vec::new();
    let mut dropped = Vec::new();
    for tool in tools {
        dropped.extend(tool.hosted.keys().cloned());
        for declaration in &tool.function_declarations {
            if declaration.name.is_empty() {
                continue;
            }
            let parameters = declaration
                .parameters_json_schema
                .clone()
                .or_else(|| declaration.parameters.as_ref().map(to_json_schema))
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            out.push(ToolDefinition::Function(FunctionTool {
                name: declaration.name.clone(),
                description: declaration.description.clone(),
                parameters: Some(parameters),
                ..FunctionTool::default()
            }));
        }
    }
    (out, dropped)
}

/// `AUTO` → auto, `NONE` → none, `ANY` → required, or that one tool when exactly one is
/// allowed (Chat Completions cannot name a subset: more allowed names leave the choice open).
fn tool_choice(config: &FunctionCallingConfig) -> Option<ToolChoice> {
    let mode = config.mode.as_deref()?.to_ascii_uppercase();
    match mode.as_str() {
        "AUTO" | "VALIDATED" => Some(ToolChoice::Auto),
        "NONE" => Some(ToolChoice::None),
        "ANY" => Some(match config.allowed_function_names.as_slice() {
            [only] => ToolChoice::Tool(only.clone()),
            _ => ToolChoice::Required,
        }),
        _ => None,
    }
}

/// JSON output: a schema (JSON Schema as given, or Google's converted) named `response`, or a
/// JSON object when none is given.
fn response_format(config: &GenerationConfig) -> Option<ResponseFormat> {
    let schema = config
        .response_json_schema
        .clone()
        .or_else(|| config.response_schema.as_ref().map(to_json_schema));
    let json_mime = config
        .response_mime_type
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"));
    match schema {
        Some(schema) => Some(ResponseFormat::JsonSchema {
            name: "response".to_owned(),
            schema: Some(schema),
            strict: None,
        }),
        None if json_mime => Some(ResponseFormat::JsonObject),
        None => None,
    }
}

/// A thinking level as itself (`minimal` as `low`), a budget as the Messages front reads one:
/// `0` turns thinking off, `-1` (the model decides) is `medium`.
fn effort(config: &ThinkingConfig) -> Option<String> {
    if let Some(level) = config.thinking_level.as_deref() {
        let level = level.to_ascii_lowercase();
        return match level.as_str() {
            "minimal" | "low" => Some("low".to_owned()),
            "medium" | "high" => Some(level),
            _ => None,
        };
    }
    let word = match config.thinking_budget? {
        0 => return None,
        ..0 => "medium",
        1..8_192 => "low",
        8_192..24_576 => "medium",
        _ => "high",
    };
    Some(word.to_owned())
}
