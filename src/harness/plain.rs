//! The conversation as a plain Chat Completions request: nothing rewritten, only re-expressed.
//! What a rewriting harness sends for a request it leaves alone in substance (a client's own title
//! request arriving in another protocol), and the inverse of `protocols::chat::request`.
//!
//! Calls follow the assistant message before them (the model lists text and calls as items; Chat
//! Completions puts them in one message); freeform tools become functions taking `{"input": text}`.

use serde_json::{Map, Value, json};

use crate::api::chat::{
    Arguments, ChatRequest, Content, ContentPart, FunctionCall, FunctionDef, Message, Role,
    StreamOptions, ToolCall, ToolDef,
};
use crate::conversation::{
    self as model, Conversation, Item, Part, ResponseFormat, ToolChoice, ToolDefinition,
};

/// The description a freeform tool's `input` parameter gets.
const FREEFORM_INPUT: &str = "The raw input of the tool (for apply_patch: the whole patch, *** Begin Patch … *** End Patch).";

/// The conversation as a Chat Completions request. `upstream_streams`: ask for a stream with usage
/// whatever the client asked (a renderer for another protocol needs the events either way).
pub fn chat_request(conversation: &Conversation, upstream_streams: bool) -> ChatRequest {
    let options = &conversation.options;
    let mut extra = options.extra.clone();
    if !options.stop.is_empty() {
        extra.insert("stop".into(), json!(options.stop));
    }
    if let Some(format) = &options.response_format {
        extra.insert("response_format".into(), response_format(format));
    }
    let user = match extra.remove("user") {
        Some(Value::String(user)) => Some(user),
        Some(other) => {
            extra.insert("user".into(), other);
            None
        }
        None => None,
    };
    let (stream, include_usage) = if upstream_streams {
        (Some(true), true)
    } else {
        (Some(options.stream), options.include_usage)
    };
    let tools: Vec<ToolDef> = conversation.tools.iter().filter_map(tool).collect();
    ChatRequest {
        model: conversation.model.clone(),
        messages: messages(&conversation.items),
        stream,
        stream_options: (stream == Some(true) && include_usage).then(|| StreamOptions {
            include_usage: Some(true),
            extra: Map::new(),
        }),
        // OpenAI refuses `tool_choice` and `parallel_tool_calls` without `tools` (a Codex TUI
        // title request sends them with none): they go only beside tools.
        tool_choice: options
            .tool_choice
            .as_ref()
            .filter(|_| !tools.is_empty())
            .map(tool_choice),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| !tools.is_empty()),
        tools: (!tools.is_empty()).then_some(tools),
        temperature: options.temperature,
        top_p: options.top_p,
        max_tokens: options.max_output_tokens,
        max_completion_tokens: None,
        reasoning_effort: options.reasoning_effort.clone(),
        user,
        extra,
    }
}

fn messages(items: &[Item]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Item::Message(message) => out.push(Message {
                role: match message.role {
                    model::Role::System => Role::System,
                    model::Role::Developer => Role::Developer,
                    model::Role::User => Role::User,
                    model::Role::Assistant => Role::Assistant,
                },
                content: Some(content(&message.content)),
                name: None,
                tool_calls: None,
                tool_call_id: None,
                extra: Map::new(),
            }),
            Item::ToolCall(call) => {
                let call = ToolCall {
                    id: call.id.clone(),
                    kind: Some("function".into()),
                    function: FunctionCall {
                        name: call.name.clone(),
                        arguments: Arguments::Text(call.input.as_arguments().into_owned()),
                    },
                    extra: Map::new(),
                };
                match out.last_mut().filter(|m| m.role == Role::Assistant) {
                    Some(last) => last.tool_calls.get_or_insert_with(Vec::new).push(call),
                    None => out.push(Message {
                        role: Role::Assistant,
                        content: None,
                        name: None,
                        tool_calls: Some(vec![call]),
                        tool_call_id: None,
                        extra: Map::new(),
                    }),
                }
            }
            Item::ToolResult(result) => out.push(Message {
                role: Role::Tool,
                content: Some(content(&result.content)),
                name: None,
                tool_calls: None,
                tool_call_id: result.call_id.clone(),
                extra: Map::new(),
            }),
            // Reasoning the client echoes is its own; it is never sent back as text.
            Item::Reasoning(_) => {}
        }
    }
    out
}

fn content(content: &model::Content) -> Content {
    match content {
        model::Content::Text(text) => Content::Text(text.clone()),
        model::Content::Parts(parts) => Content::Parts(parts.iter().map(part).collect()),
    }
}

fn part(part: &Part) -> ContentPart {
    match part {
        Part::Text(text) => ContentPart {
            kind: "text".into(),
            text: Some(text.clone()),
            extra: Map::new(),
        },
        Part::Image(image) => {
            let mut url = json!({ "url": image.url });
            if let Some(detail) = &image.detail {
                url["detail"] = json!(detail);
            }
            let mut extra = Map::new();
            extra.insert("image_url".into(), url);
            ContentPart {
                kind: "image_url".into(),
                text: None,
                extra,
            }
        }
        Part::Other(raw) => serde_json::from_value(raw.clone()).unwrap_or(ContentPart {
            kind: String::new(),
            text: None,
            extra: Map::new(),
        }),
    }
}

/// A tool definition in Chat Completions form; `None` for hosted and unknown tools.
pub fn tool(definition: &ToolDefinition) -> Option<ToolDef> {
    let (name, description, parameters, strict, mut extra, mut outer) = match definition {
        ToolDefinition::Function(f) => (
            &f.name,
            f.description.clone(),
            f.parameters.clone(),
            f.strict,
            f.extra.clone(),
            f.outer.clone(),
        ),
        ToolDefinition::Freeform(f) => (
            &f.name,
            f.description.clone(),
            Some(json!({
                "type": "object",
                "properties": {"input": {"type": "string", "description": FREEFORM_INPUT}},
                "required": ["input"],
                "additionalProperties": false
            })),
            None,
            Map::new(),
            Map::new(),
        ),
        // Hosted and unknown tools have no Chat Completions form.
        ToolDefinition::Other { .. } => return None,
    };
    if let Some(strict) = strict {
        extra.insert("strict".into(), json!(strict));
    }
    Some(ToolDef {
        kind: "function".into(),
        function: Some(FunctionDef {
            name: name.clone(),
            description,
            parameters,
            extra,
        }),
        name: match outer.remove("name") {
            Some(Value::String(name)) => Some(name),
            _ => None,
        },
        extra: outer,
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut inner = Map::new();
            inner.insert("name".into(), json!(name));
            if let Some(schema) = schema {
                inner.insert("schema".into(), schema.clone());
            }
            if let Some(strict) = strict {
                inner.insert("strict".into(), json!(strict));
            }
            json!({"type": "json_schema", "json_schema": inner})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{
        CallInput, FreeformTool, FunctionTool, Message, Options, Reasoning, ToolCall, ToolResult,
    };

    /// Written by hand from the Chat Completions request format: calls join the assistant message
    /// before them, a freeform call's input becomes `{"input": …}`, reasoning is not sent, a
    /// freeform tool is a function taking `input`, a hosted tool is left out.
    #[test]
    fn the_model_as_a_plain_chat_request() {
        let conversation = Conversation {
            model: "m".into(),
            items: vec![
                Item::Message(Message::text(model::Role::System, "sys")),
                Item::Message(Message::text(model::Role::User, "patch it")),
                Item::Reasoning(Reasoning {
                    text: "thinking".into(),
                    opaque: None,
                    sealed: None,
                    signature: None,
                    redacted: Vec::new(),
                }),
                Item::Message(Message::text(model::Role::Assistant, "ok")),
                Item::ToolCall(ToolCall {
                    id: Some("c1".into()),
                    name: "apply_patch".into(),
                    input: CallInput::Freeform("*** Begin Patch".into()),
                }),
                Item::ToolResult(ToolResult {
                    call_id: Some("c1".into()),
                    content: model::Content::Text("done".into()),
                    is_error: false,
                }),
                Item::ToolCall(ToolCall {
                    id: None,
                    name: "read".into(),
                    input: CallInput::Arguments("{\"path\":\"a\"}".into()),
                }),
            ],
            tools: vec![
                ToolDefinition::Freeform(FreeformTool {
                    name: "apply_patch".into(),
                    description: Some("Patch.".into()),
                    format: None,
                }),
                ToolDefinition::Function(FunctionTool {
                    name: "read".into(),
                    parameters: Some(json!({"type": "object"})),
                    strict: Some(true),
                    ..FunctionTool::default()
                }),
                ToolDefinition::Other {
                    name: Some("web_search".into()),
                    raw: json!({"type": "web_search"}),
                },
            ],
            options: Options {
                stream: false,
                tool_choice: Some(ToolChoice::Tool("read".into())),
                max_output_tokens: Some(100),
                ..Options::default()
            },
            client: model::ClientInfo::default(),
        };
        let chat = serde_json::to_value(chat_request(&conversation, true)).expect("json");
        assert_eq!(
            chat,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "patch it"},
                    {"role": "assistant", "content": "ok", "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\"}"}}
                    ]},
                    {"role": "tool", "content": "done", "tool_call_id": "c1"},
                    {"role": "assistant", "tool_calls": [
                        {"type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
                    ]}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [
                    {"type": "function", "function": {"name": "apply_patch", "description": "Patch.", "parameters": {
                        "type": "object",
                        "properties": {"input": {"type": "string", "description": FREEFORM_INPUT}},
                        "required": ["input"],
                        "additionalProperties": false
                    }}},
                    {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}, "strict": true}}
                ],
                "tool_choice": {"type": "function", "function": {"name": "read"}},
                "max_tokens": 100
            })
        );
        let as_asked = serde_json::to_value(chat_request(&conversation, false)).expect("json");
        assert_eq!(as_asked["stream"], json!(false));
        assert!(as_asked.get("stream_options").is_none());
    }

    /// Written by hand from OpenAI's rule: `tool_choice` and `parallel_tool_calls` are refused
    /// unless `tools` is present (the Codex TUI's title request has `tool_choice: "auto"` and no
    /// tools).
    #[test]
    fn no_tool_choice_or_parallel_tool_calls_without_tools() {
        let conversation = Conversation {
            model: "m".into(),
            items: vec![Item::Message(Message::text(
                model::Role::User,
                "title this",
            ))],
            tools: Vec::new(),
            options: Options {
                stream: false,
                tool_choice: Some(ToolChoice::Auto),
                parallel_tool_calls: Some(false),
                ..Options::default()
            },
            client: model::ClientInfo::default(),
        };
        let chat = serde_json::to_value(chat_request(&conversation, false)).expect("json");
        assert_eq!(
            chat,
            json!({"model": "m", "messages": [{"role": "user", "content": "title this"}], "stream": false})
        );
    }
}
