//! opencode's titles: the title request it sends for a new session (docs/wire.md §2: title
//! prompt, fixed user line, quoted user text, with its thread headers), and how its own title
//! request — or another agent's, as the fronts translate it — is told from a turn.

use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;

use crate::clients::quote::quote_prompt;
use crate::conversation::{Conversation, ResponseFormat, Role};
use crate::harness::{HarnessError, TitleWords};

/// The fixed instruction line sent before the user's text.
pub const TITLE_USER_LINE: &str = "Generate a title for this conversation:\n";

#[derive(Serialize)]
struct TitleBody<'a> {
    model: &'a str,
    max_tokens: u32,
    temperature: u8,
    stream: bool,
    stream_options: StreamOptions,
    messages: Vec<Message<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: std::borrow::Cow<'a, str>,
}

/// The compact JSON body of the title request for `words`: opencode's own for its first user
/// words (fixed line, quoted text); for an exchange, the rendered halves as the one user message
/// after the title prompt, with opencode's parameters.
pub fn title_body(
    model: &str,
    title_prompt: &str,
    words: TitleWords<'_>,
) -> Result<Vec<u8>, HarnessError> {
    let system = Message {
        role: "system",
        content: title_prompt.into(),
    };
    let messages = match words {
        TitleWords::FirstUser(text) => vec![
            system,
            Message {
                role: "user",
                content: TITLE_USER_LINE.into(),
            },
            Message {
                role: "user",
                content: quote_prompt(text).into(),
            },
        ],
        TitleWords::Exchange(text) => vec![
            system,
            Message {
                role: "user",
                content: text.into(),
            },
        ],
    };
    let body = TitleBody {
        model,
        max_tokens: 32_000,
        temperature: 1,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        messages,
    };
    serde_json::to_vec(&body).map_err(HarnessError::Encode)
}

/// The reference client's thread headers (docs/wire.md §1 "Headers"), carrying the conversation id
/// on its requests, title requests included.
pub fn add_thread_headers(headers: &mut HeaderMap, conversation: &str) {
    // Names made once: inserting by text parses each name on every request.
    static NAMES: [HeaderName; 3] = [
        HeaderName::from_static("x-client-request-id"),
        HeaderName::from_static("session-id"),
        HeaderName::from_static("thread-id"),
    ];
    if let Ok(value) = HeaderValue::from_str(conversation) {
        for name in &NAMES {
            headers.insert(name.clone(), value.clone());
        }
    }
}

/// How opencode's title prompt opens (whatever prompt this proxy itself is configured with).
const TITLE_PROMPT_OPENING: &str = "You are a title generator.";

/// Tells a client's own title request from a turn.
#[derive(Debug, Clone)]
pub struct TitleRecogniser {
    /// First line of the configured title prompt.
    title_opening: String,
}

impl TitleRecogniser {
    pub fn new(title_prompt: &str) -> Self {
        Self {
            title_opening: title_prompt
                .lines()
                .next()
                .unwrap_or(TITLE_PROMPT_OPENING)
                .trim()
                .to_owned(),
        }
    }

    /// A client's own title request: its system prompt is a title prompt (opencode's, or this
    /// proxy's configured one), or it asks for a JSON title with no tools (Codex, Claude Code).
    pub fn is_title_request(&self, conversation: &Conversation) -> bool {
        is_schema_title_request(conversation)
            || conversation.messages().any(|m| {
                m.role == Role::System && {
                    let text = m.content.text();
                    let text = text.trim_start();
                    text.starts_with(TITLE_PROMPT_OPENING) || text.starts_with(&self.title_opening)
                }
            })
            || asks_for_a_title(conversation)
    }
}

/// A helper call recognised by what it asks, whatever agent sends it: no tools, and its
/// instructions (system or developer text) ask for a title of the conversation, session, chat or
/// thread. Such a call is the agent's own title request, never a conversation of its own.
fn asks_for_a_title(conversation: &Conversation) -> bool {
    conversation.tools.is_empty()
        && conversation.messages().any(|m| {
            matches!(m.role, Role::System | Role::Developer) && {
                let text = m.content.text().to_lowercase();
                text.contains("title")
                    && ["conversation", "session", "chat", "thread"]
                        .iter()
                        .any(|w| text.contains(w))
            }
        })
}

/// A client's own title request asking for a JSON answer, as the fronts translate it: no tools
/// and a JSON-schema answer format that is Codex's (`codex_output_schema`, docs/agents.md "What
/// the Responses front does") or holds one property, `title` (Claude Code's `output_config.format` `{title}`).
fn is_schema_title_request(conversation: &Conversation) -> bool {
    let Some(ResponseFormat::JsonSchema { name, schema, .. }) =
        &conversation.options.response_format
    else {
        return false;
    };
    let only_a_title = schema
        .as_ref()
        .and_then(|s| s.pointer("/properties"))
        .and_then(serde_json::Value::as_object)
        .is_some_and(|p| p.len() == 1 && p.contains_key("title"));
    // Codex's TUI offers its `apply_patch` even on its title thread: its schema says enough.
    let codex = name == CODEX_TITLE_SCHEMA;
    (conversation.tools.is_empty() && (codex || only_a_title)) || (codex && only_a_title)
}

const CODEX_TITLE_SCHEMA: &str = "codex_output_schema";

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29: another agent's title helper (a tool-less request whose instructions ask for a
    /// title) is the client's own title request, not a conversation; a tool-less question about
    /// titles of something else is not.
    #[test]
    fn a_helper_asking_for_a_title_of_the_conversation_is_a_title_request() {
        let recogniser = TitleRecogniser::new("You are a title generator.\n");
        let ask = |system: &str, tools: bool| {
            let mut conversation = Conversation {
                items: vec![
                    crate::conversation::Item::Message(crate::conversation::Message::text(
                        Role::System,
                        system,
                    )),
                    crate::conversation::Item::Message(crate::conversation::Message::text(
                        Role::User,
                        "fix the login bug",
                    )),
                ],
                ..Conversation::default()
            };
            if tools {
                conversation
                    .tools
                    .push(crate::conversation::ToolDefinition::Function(
                        crate::conversation::FunctionTool {
                            name: "bash".into(),
                            ..Default::default()
                        },
                    ));
            }
            recogniser.is_title_request(&conversation)
        };
        assert!(ask(
            "Generate a concise title (3-7 words) for this chat session.",
            false
        ));
        assert!(ask(
            "Summarize the conversation below as a short TITLE.",
            false
        ));
        assert!(
            !ask("Generate a concise title for this chat session.", true),
            "an agent turn"
        );
        assert!(!ask("You write blog posts; suggest a headline.", false));
    }

    #[test]
    fn body_matches_the_spec_layout() {
        let body = String::from_utf8(
            title_body(
                "mock-model",
                "PROMPT\n",
                TitleWords::FirstUser("Run the QA pass\nthen report"),
            )
            .expect("a title body"),
        )
        .expect("utf8");
        assert_eq!(
            body,
            concat!(
                r#"{"model":"mock-model","max_tokens":32000,"temperature":1,"stream":true,"#,
                r#""stream_options":{"include_usage":true},"messages":[{"role":"system","content":"PROMPT\n"},"#,
                r#"{"role":"user","content":"Generate a title for this conversation:\n"},"#,
                r#"{"role":"user","content":"\"Run the QA pass\nthen report\""}]}"#
            )
        );
    }

    #[test]
    fn an_exchange_is_one_plain_user_message_after_the_prompt() {
        let body = String::from_utf8(
            title_body(
                "m",
                "PROMPT",
                TitleWords::Exchange("USER:\nfix it\n\nASSISTANT:\nfixed"),
            )
            .expect("a title body"),
        )
        .expect("utf8");
        assert!(
            body.ends_with(
                r#""messages":[{"role":"system","content":"PROMPT"},{"role":"user","content":"USER:\nfix it\n\nASSISTANT:\nfixed"}]}"#
            ),
            "{body}"
        );
    }
}
