//! A Chat Completions request → the conversation model. Lossless for everything a harness reads:
//! an assistant message becomes its reasoning (`reasoning_content`), its text and its calls, a
//! `tool` message a result; fields with no slot in the model stay in `options.extra`. `function`
//! and unknown roles are not part of any conversation a harness rebuilds and are left out.

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

use crate::api::chat::{ChatRequest, Content, ContentPart, Message, Role, ToolDef};
use crate::conversation::{
    self as model, CallInput, Conversation, FunctionTool, Image, Item, Options, Part,
    ResponseFormat, ToolCall, ToolChoice, ToolDefinition, ToolResult,
};
use crate::error::ProxyError;
use crate::protocols::Inbound;

/// The Chat Completions front's parse: the client's bytes → the model. Answers are served by the
/// chat answer side (no renderer).
pub fn parse(body: &Bytes, _headers: &HeaderMap) -> Result<Inbound, ProxyError> {
    Ok(Inbound {
        conversation: to_conversation(parse_request(body)?),
        renderer: None,
        dropped_tools: Vec::new(),
    })
}

/// Parses a Chat Completions body, saying where it is broken.
pub fn parse_request(body: &[u8]) -> Result<ChatRequest, ProxyError> {
    // Path tracking costs on every element, so only a failed parse is repeated with it.
    serde_json::from_slice(body).map_err(|first| describe_parse_error(body, first))
}

/// `first`, the fast parse's error, said again with the path of what is broken. A body whose
/// request parses but that goes on after it fails at its end: `first` is that error already.
fn describe_parse_error(body: &[u8], first: serde_json::Error) -> ProxyError {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let result: Result<ChatRequest, _> = serde_path_to_error::deserialize(&mut deserializer);
    let Err(err) = result else {
        return ProxyError::invalid_json(first);
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    // serde_json reports some type mismatches as syntax (`{"role":1}` where an enum is expected
    // says "expected value"), so only a body that is not JSON at all is `invalid_json`.
    let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
    if (inner.is_syntax() || inner.is_eof()) && !is_json {
        ProxyError::invalid_json(inner)
    } else {
        ProxyError::InvalidRequest {
            message: format!("invalid chat completions request at `{path}`: {inner}"),
            param: None,
            code: "invalid_request",
        }
    }
}

/// A Chat Completions body straight to the model (tools, `rewrite` and golden tests).
pub fn parse_conversation(body: &[u8]) -> Result<Conversation, ProxyError> {
    parse_request(body).map(to_conversation)
}

/// The model of a parsed Chat Completions request.
pub fn to_conversation(mut request: ChatRequest) -> Conversation {
    let options = options(&mut request);
    let ChatRequest {
        model,
        messages,
        tools,
        ..
    } = request;
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        push_message(message, &mut items);
    }
    Conversation {
        model,
        items,
        tools: tools.unwrap_or_default().into_iter().map(tool).collect(),
        options,
        client: model::ClientInfo::default(),
    }
}

fn push_message(message: Message, items: &mut Vec<Item>) {
    let role = match message.role {
        Role::System => model::Role::System,
        Role::Developer => model::Role::Developer,
        Role::User => model::Role::User,
        Role::Assistant => {
            let has_calls = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
            // The reasoning this client echoes (opencode's `reasoning_content`; `reasoning` as
            // OpenRouter names it) goes before the turn's text and calls, as the other fronts put it.
            if let Some(text) = ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|key| message.extra.get(*key).and_then(Value::as_str))
                .filter(|text| !text.is_empty())
            {
                items.push(Item::Reasoning(model::Reasoning {
                    text: text.to_owned(),
                    opaque: None,
                    sealed: None,
                    signature: None,
                    redacted: Vec::new(),
                }));
            }
            match message.content {
                Some(content) => items.push(Item::Message(model::Message {
                    role: model::Role::Assistant,
                    content: content_of(content),
                })),
                // An empty answer is still an answer (it ends an exchange).
                None if !has_calls => items.push(Item::Message(model::Message {
                    role: model::Role::Assistant,
                    content: no_content(),
                })),
                None => {}
            }
            for call in message.tool_calls.into_iter().flatten() {
                items.push(Item::ToolCall(ToolCall {
                    id: call.id,
                    name: call.function.name,
                    input: CallInput::Arguments(call.function.arguments.into_text()),
                }));
            }
            return;
        }
        Role::Tool => {
            items.push(Item::ToolResult(ToolResult {
                call_id: message.tool_call_id,
                content: message.content.map_or_else(no_content, content_of),
                is_error: false,
            }));
            return;
        }
        Role::Function | Role::Other => return,
    };
    items.push(Item::Message(model::Message {
        role,
        content: message.content.map_or_else(no_content, content_of),
    }));
}

/// `content: null` (or absent): no parts at all, which is not the same as one empty string.
fn no_content() -> model::Content {
    model::Content::Parts(Vec::new())
}

fn content_of(content: Content) -> model::Content {
    match content {
        Content::Text(text) => model::Content::Text(text),
        Content::Parts(parts) => model::Content::Parts(parts.into_iter().map(part).collect()),
    }
}

fn part(mut part: ContentPart) -> Part {
    if part.text().is_some() {
        return Part::Text(part.text.take().unwrap_or_default());
    }
    if part.kind == "image_url" {
        let image = part.extra.get("image_url");
        let url = image
            .and_then(|i| i.as_str().or_else(|| i.get("url").and_then(Value::as_str)))
            .map(str::to_owned);
        if let Some(url) = url {
            let detail = image
                .and_then(|i| i.get("detail"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            return Part::Image(Image { url, detail });
        }
    }
    Part::Other(serde_json::to_value(&part).unwrap_or(Value::Null))
}

fn tool(def: ToolDef) -> ToolDefinition {
    match def.function {
        Some(function) if def.kind == "function" || def.kind.is_empty() => {
            ToolDefinition::Function(FunctionTool {
                name: function.name,
                description: function.description,
                parameters: function.parameters,
                strict: function.extra.get("strict").and_then(Value::as_bool),
                extra: {
                    let mut extra = function.extra;
                    extra.remove("strict");
                    extra
                },
                outer: {
                    let mut outer = def.extra;
                    if let Some(name) = def.name {
                        outer.insert("name".into(), Value::String(name));
                    }
                    outer
                },
            })
        }
        function => {
            let name = function
                .as_ref()
                .map(|f| f.name.clone())
                .or_else(|| def.name.clone());
            let raw = serde_json::to_value(ToolDef { function, ..def }).unwrap_or(Value::Null);
            ToolDefinition::Other { name, raw }
        }
    }
}

/// Takes the request's `extra` (the rest of the request is left as it was).
fn options(request: &mut ChatRequest) -> Options {
    let mut extra = std::mem::take(&mut request.extra);
    let response_format = match extra.remove("response_format") {
        Some(raw) => {
            let parsed = response_format(&raw);
            if parsed.is_none() {
                // A format this model does not know stays as it was.
                extra.insert("response_format".into(), raw);
            }
            parsed
        }
        None => None,
    };
    let stop = match extra.remove("stop") {
        Some(Value::String(stop)) => vec![stop],
        Some(Value::Array(stops)) => stops
            .into_iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        Some(other) => {
            extra.insert("stop".into(), other);
            Vec::new()
        }
        None => Vec::new(),
    };
    let tool_choice = request.tool_choice.take().and_then(|choice| {
        let parsed = tool_choice(&choice);
        if parsed.is_none() {
            extra.insert("tool_choice".into(), choice);
        }
        parsed
    });
    if let Some(user) = request.user.take() {
        extra.insert("user".into(), Value::String(user));
    }
    Options {
        stream: request.wants_stream(),
        include_usage: request.wants_usage(),
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens: request.max_completion_tokens.or(request.max_tokens),
        reasoning_effort: request.reasoning_effort.take(),
        tool_choice,
        parallel_tool_calls: request.parallel_tool_calls,
        stop,
        response_format,
        extra,
    }
}

fn tool_choice(choice: &Value) -> Option<ToolChoice> {
    match choice {
        Value::String(s) => match s.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            _ => None,
        },
        Value::Object(o) => o
            .get("function")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .map(|name| ToolChoice::Tool(name.to_owned())),
        _ => None,
    }
}

fn response_format(format: &Value) -> Option<ResponseFormat> {
    match format.get("type").and_then(Value::as_str)? {
        "text" => Some(ResponseFormat::Text),
        "json_object" => Some(ResponseFormat::JsonObject),
        "json_schema" => {
            let schema = format.get("json_schema")?;
            Some(ResponseFormat::JsonSchema {
                name: schema
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("response")
                    .to_owned(),
                schema: schema.get("schema").cloned(),
                strict: schema.get("strict").and_then(Value::as_bool),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Written by hand from the Chat Completions request format and the model's rules.
    #[test]
    fn a_chat_request_in_the_model() {
        let body = json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:x", "detail": "low"}}]},
                {"role": "assistant", "content": "ok", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
                {"role": "function", "name": "old", "content": "ignored"},
                {"role": "assistant", "content": null}
            ],
            "tools": [
                {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}, "strict": true, "x": 1}, "name": "bash"},
                {"type": "local_shell"}
            ],
            "tool_choice": "required",
            "stop": ["END"],
            "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "object"}}},
            "max_tokens": 10,
            "seed": 7
        });
        let conversation = parse_conversation(body.to_string().as_bytes()).expect("parses");
        assert_eq!(
            conversation.items,
            [
                Item::Message(model::Message::text(model::Role::System, "sys")),
                Item::Message(model::Message {
                    role: model::Role::User,
                    content: model::Content::Parts(vec![
                        Part::Text("look".into()),
                        Part::Image(Image {
                            url: "data:x".into(),
                            detail: Some("low".into())
                        }),
                    ]),
                }),
                Item::Message(model::Message::text(model::Role::Assistant, "ok")),
                Item::ToolCall(ToolCall {
                    id: Some("c1".into()),
                    name: "bash".into(),
                    input: CallInput::Arguments("{\"command\":\"ls\"}".into()),
                }),
                Item::ToolResult(ToolResult {
                    call_id: Some("c1".into()),
                    content: model::Content::Text("a.txt".into()),
                    is_error: false,
                }),
                Item::Message(model::Message {
                    role: model::Role::Assistant,
                    content: model::Content::Parts(Vec::new()),
                }),
            ]
        );
        let ToolDefinition::Function(bash) = &conversation.tools[0] else {
            panic!("a function tool");
        };
        assert_eq!(
            (bash.strict, bash.extra.get("x"), bash.outer.get("name")),
            (Some(true), Some(&json!(1)), Some(&json!("bash")))
        );
        assert!(matches!(
            &conversation.tools[1],
            ToolDefinition::Other { name: None, .. }
        ));
        let options = &conversation.options;
        assert!(options.stream && options.include_usage);
        assert_eq!(options.tool_choice, Some(ToolChoice::Required));
        assert_eq!(options.stop, ["END"]);
        assert_eq!(options.max_output_tokens, Some(10));
        assert_eq!(
            options.response_format,
            Some(ResponseFormat::JsonSchema {
                name: "t".into(),
                schema: Some(json!({"type": "object"})),
                strict: None
            })
        );
        assert_eq!(options.extra.get("seed"), Some(&json!(7)));
    }

    #[test]
    fn broken_bodies_say_where() {
        let err = parse_conversation(b"{\"model\": \"m\", \"messages\": [{\"role\": 1}]}")
            .expect_err("a bad role");
        assert!(err.to_string().contains("messages[0].role"), "{err}");
        let err = parse_conversation(b"{not json").expect_err("not JSON");
        assert!(matches!(err, ProxyError::InvalidJson { .. }), "{err}");
        let err = parse_conversation(b"{\"model\": \"m\", \"messages\": []} x")
            .expect_err("more after the request");
        assert_eq!(
            err.to_string(),
            "request body is not valid JSON: trailing characters at line 1 column 32"
        );
        assert!(matches!(err, ProxyError::InvalidJson { .. }), "{err}");
    }
}
