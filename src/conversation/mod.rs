//! The protocol-neutral conversation: what every client protocol's request is parsed into once, and
//! what every later stage (harnesses, titles, routing) reads. Ordered items — system / developer /
//! user messages, assistant text, reasoning (opaque, carried), tool calls (function or freeform,
//! with their call id), tool results — plus tool definitions, sampling options and what the client
//! told about itself. `answer` holds the other direction: the answer as a stream of events.
//!
//! Pure data: no I/O, no clock, no axum, no wire format. Each protocol adapter
//! (`protocols::{chat, responses, messages, gemini}`) builds it; a harness turns it into the
//! upstream Chat Completions body; `mapping` says how the upstream's answer is mapped back
//! (`ResponsePlan`, `CallMapper`). Also: `view` (the message views the title facts read),
//! `action` (what a text-protocol harness makes of a whole answer), `body_parts` (an upstream
//! body as runs of bytes, a harness's prompts shared, not copied), `seal` (the proxy's reasoning
//! seal in a client's opaque field, whose key `routes::inbound` hands the renderers).

pub mod action;
pub mod answer;
pub mod body_parts;
pub mod mapping;
pub mod seal;
pub mod view;

use serde_json::{Map, Value};

/// One client request, whatever protocol it came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    pub model: String,
    /// System prompt(s), then the history, oldest first, as the client sent them.
    pub items: Vec<Item>,
    /// The tools the client offers, in its own dialect (a client profile maps them).
    pub tools: Vec<ToolDefinition>,
    pub options: Options,
    pub client: ClientInfo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A system, developer or user message, or assistant text.
    Message(Message),
    /// Reasoning the client echoes back (Responses `reasoning`, Anthropic `thinking`, a Chat
    /// client's `reasoning_content`): a harness may send it back as the upstream's reasoning.
    Reasoning(Reasoning),
    /// A call the assistant made; the calls right after an assistant message belong to its turn.
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Content,
}

impl Message {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Content::Text(text.into()),
        }
    }
}

/// A message's content: one string, or typed parts (as the client sent it: a one-string content and
/// a one-part content are different requests on the wire, and a plain rendering keeps the form).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl Content {
    /// Every text part concatenated without separator, images dropped (as opencode does).
    /// Borrowed when the content is one string, so reading it copies nothing.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Text(text) => std::borrow::Cow::Borrowed(text),
            Self::Parts(parts) => match parts.as_slice() {
                [Part::Text(only)] => std::borrow::Cow::Borrowed(only),
                _ => std::borrow::Cow::Owned(parts.iter().filter_map(Part::as_text).collect()),
            },
        }
    }

    /// The text parts one by one (contextual recognisers look at each part).
    pub fn text_parts(&self) -> Vec<&str> {
        match self {
            Self::Text(text) => vec![text.as_str()],
            Self::Parts(parts) => parts.iter().filter_map(Part::as_text).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Image(Image),
    /// A part this model has no slot for (audio, file, refusal…), kept as the client sent it.
    Other(Value),
}

impl Part {
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Image(_) | Self::Other(_) => None,
        }
    }
}

/// An image: a URL, or a `data:` URL for inline bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub url: String,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasoning {
    /// Readable reasoning text or summary, if the client sent any.
    pub text: String,
    /// The item as the client sent it (signatures, encrypted content), for a protocol that needs
    /// it back.
    pub opaque: Option<Value>,
    /// The client's opaque reasoning field (a thinking block's `signature`, a reasoning item's
    /// `encrypted_content`): the proxy's own seal (`seal`) if it echoes one.
    pub sealed: Option<String>,
    /// The model server's own signature of this reasoning (an Anthropic thinking `signature`),
    /// recovered from the proxy's seal (`seal::recover`): what a Messages upstream checks when
    /// the reasoning goes back to it.
    pub signature: Option<String>,
    /// The server's redacted thinking (Anthropic `redacted_thinking` blocks' `data`), in the
    /// order it came: opaque, readable by that server alone, and required back with the history
    /// as its signature is. Recovered from the seal or the reasoning memo.
    pub redacted: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call id; `None` when the client sent none (the harness makes one up).
    pub id: Option<String>,
    /// The tool's name in the client's dialect.
    pub name: String,
    pub input: CallInput,
}

/// What a call carries: JSON arguments (function tools) or free text (freeform tools such as
/// Codex's `apply_patch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallInput {
    /// A JSON text, as the client sent it (not necessarily valid).
    Arguments(String),
    Freeform(String),
}

impl CallInput {
    /// As function arguments: a freeform input is the object `{"input": text}` (how freeform tools
    /// are offered to a Chat Completions upstream).
    pub fn as_arguments(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Arguments(args) => std::borrow::Cow::Borrowed(args),
            Self::Freeform(input) => {
                std::borrow::Cow::Owned(serde_json::json!({ "input": input }).to_string())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: Option<String>,
    pub content: Content,
    /// The client marked the result as a failure (Anthropic `is_error`).
    pub is_error: bool,
}

impl ToolResult {
    /// The result's text: the string, or its non-blank text parts joined by `\n`.
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(Part::as_text)
                .filter(|t| !t.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A tool the client offers.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolDefinition {
    Function(FunctionTool),
    /// A tool taking free text (Responses `custom`), with its grammar or format if any.
    Freeform(FreeformTool),
    /// Anything else (hosted tools, unknown kinds), kept opaque; no harness sends these upstream.
    Other {
        name: Option<String>,
        raw: Value,
    },
}

impl ToolDefinition {
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Function(f) => Some(&f.name),
            Self::Freeform(f) => Some(&f.name),
            Self::Other { name, .. } => name.as_deref(),
        }
    }

    /// Whether its parameters schema (an opaque tool's whole definition), as JSON text, takes
    /// more than `limit` bytes (`limits.max_tool_schema_bytes`). Counted without building the
    /// text, stopping at the limit. A freeform tool's schema is the bridge's own, never large.
    pub fn schema_exceeds(&self, limit: usize) -> bool {
        let schema = match self {
            Self::Function(f) => f.parameters.as_ref(),
            Self::Freeform(_) => None,
            Self::Other { raw, .. } => Some(raw),
        };
        schema.is_some_and(|schema| json_len(schema, limit).is_none())
    }
}

/// `value` as compact JSON text, the same text as its `to_string`: serialised straight into a
/// buffer, where `Display` goes through `fmt::Write` piece by piece (twice the instructions for
/// a call's arguments, which every rebuilt turn converts several times).
pub fn json_text(value: &Value) -> String {
    // A `Value` always serialises (its keys are strings, its numbers finite); were it ever to
    // fail, `Display` writes the same text its own way.
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// `value`'s length as JSON text, `None` once it passes `limit`.
pub fn json_len(value: &Value, limit: usize) -> Option<usize> {
    /// Counts what is written and refuses past the limit, so serialising stops there.
    struct Count {
        written: usize,
        limit: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written += buf.len();
            if self.written > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { written: 0, limit };
    serde_json::to_writer(&mut count, value).ok()?;
    Some(count.written)
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FunctionTool {
    pub name: String,
    pub description: Option<String>,
    /// JSON schema of the arguments.
    pub parameters: Option<Value>,
    pub strict: Option<bool>,
    /// Fields of the client's definition with no slot here, kept so a tool offered back upstream
    /// is the client's own.
    pub extra: Map<String, Value>,
    /// Keys a Chat Completions client put beside `function` (a top-level `name`, …), likewise.
    pub outer: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FreeformTool {
    pub name: String,
    pub description: Option<String>,
    pub format: Option<Value>,
}

/// How the client wants the answer produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// The client asked for a stream.
    pub stream: bool,
    /// The client asked for the usage of a stream (Chat Completions `stream_options`; the other
    /// protocols always get usage).
    pub include_usage: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
    pub stop: Vec<String>,
    pub response_format: Option<ResponseFormat>,
    /// Chat Completions fields with no slot here, kept so a plain rendering loses nothing.
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    /// One named tool.
    Tool(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema {
        name: String,
        schema: Option<Value>,
        strict: Option<bool>,
    },
}

/// The User-Agent prefixes Codex CLI sends (`codex exec`, the interactive CLI, its TUI): the one
/// list both the Responses front and the `codex` alias profile read.
pub const CODEX_USER_AGENTS: [&str; 3] = ["codex_exec/", "codex_cli_rs/", "codex-tui"];

/// The decoded size of a `data:` URL's payload (base64: three bytes per four characters); 0 for
/// any other URL.
fn inline_bytes(url: &str) -> usize {
    // A URL parser drops leading spaces and controls, and a scheme is case-insensitive (RFC
    // 3986), as is `;base64`: `DATA:` is a data URL too (issue 30 item 6: a 22 MiB image went
    // upstream that way).
    let url = url.trim_start_matches(|c: char| c <= ' ');
    let Some(data) = url
        .get(..5)
        .filter(|scheme| scheme.eq_ignore_ascii_case("data:"))
        .map(|_| &url[5..])
    else {
        return 0;
    };
    let Some((header, payload)) = data.split_once(',') else {
        return 0;
    };
    let base64 = header
        .len()
        .checked_sub(7)
        .and_then(|at| header.get(at..))
        .is_some_and(|end| end.eq_ignore_ascii_case(";base64"));
    if base64 {
        payload.trim_end_matches('=').len() * 3 / 4
    } else {
        payload.len()
    }
}

/// What the client told about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client-dialect profile the client's own headers name on its front (`codex-responses`
    /// for Codex on the Responses front; a protocol alone implies none), used when the client
    /// named none with `x-harness-client`.
    pub profile: Option<&'static str>,
    /// A conversation id the body carries (Responses `prompt_cache_key`, Anthropic
    /// `metadata.user_id`'s session), used when no header names the conversation.
    pub conversation_key: Option<String>,
    /// The request is a helper call the agent makes beside the conversation (Gemini CLI's
    /// next-speaker check), not a turn of it: forwarded as a plain Chat Completions request,
    /// never rebuilt by a harness, never titled.
    pub aside: bool,
}

impl Conversation {
    /// Decoded bytes of every inline (`data:` URL) image in messages and tool results; an image
    /// given by URL counts nothing (the upstream fetches it).
    pub fn image_bytes(&self) -> usize {
        self.items
            .iter()
            .filter_map(|item| match item {
                Item::Message(Message {
                    content: Content::Parts(parts),
                    ..
                })
                | Item::ToolResult(ToolResult {
                    content: Content::Parts(parts),
                    ..
                }) => Some(parts),
                _ => None,
            })
            .flatten()
            .filter_map(|part| match part {
                Part::Image(image) => Some(inline_bytes(&image.url)),
                Part::Text(_) | Part::Other(_) => None,
            })
            .sum()
    }

    /// The messages, in order (calls, results and reasoning skipped).
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.items.iter().filter_map(|item| match item {
            Item::Message(message) => Some(message),
            Item::Reasoning(_) | Item::ToolCall(_) | Item::ToolResult(_) => None,
        })
    }
}
