//! Collaboration modes (docs/harnesses.md "Collaboration modes"): header `x-collaboration-mode`
//! selects Default or Plan; the mode's instructions reach the model as a `<collaboration_mode>`
//! developer message, and the mode gates `request_user_input` and sets Plan's reasoning effort.
//! Templates were rendered at start-up.

use crate::clients::contextual::is_context_only;
use crate::conversation::{Conversation, Item, Message, Role};
use crate::harness::HarnessError;

pub const HEADER: &str = "x-collaboration-mode";
/// The tool only Plan mode offers by default.
pub const REQUEST_USER_INPUT: &str = "request_user_input";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Default,
    Plan,
}

impl Mode {
    /// `default`, `plan`, and Default's aliases `code`, `pair_programming`, `execute`, `custom`.
    pub fn parse(value: &str) -> Result<Self, HarnessError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "plan" => Ok(Self::Plan),
            "default" | "code" | "pair_programming" | "execute" | "custom" => Ok(Self::Default),
            other => Err(HarnessError::Invalid {
                message: format!(
                    "unknown collaboration mode `{other}` in {HEADER}; known modes: default, plan \
                     (default also as code, pair_programming, execute, custom)"
                ),
                param: None,
                code: "unknown_collaboration_mode",
            }),
        }
    }

    pub fn from_headers(headers: &http::HeaderMap) -> Result<Option<Self>, HarnessError> {
        match headers.get(HEADER) {
            None => Ok(None),
            Some(value) => {
                let text = value.to_str().map_err(|_| HarnessError::Invalid {
                    message: format!("{HEADER} is not valid text"),
                    param: None,
                    code: "unknown_collaboration_mode",
                })?;
                Self::parse(text).map(Some)
            }
        }
    }
}

/// The rendered instructions of both modes, and the Default-mode tool switch.
#[derive(Debug, Clone)]
pub struct Collaboration {
    pub default_instructions: String,
    pub plan_instructions: String,
    /// Keep `request_user_input` in Default mode (off in the reference).
    pub default_request_user_input: bool,
}

impl Collaboration {
    /// The modes as the prompts (rendered at start-up) and `collaboration.*` config define them.
    pub fn from_prompts(
        prompts: &crate::prompts::Prompts,
        default_request_user_input: bool,
    ) -> Self {
        Self {
            default_instructions: prompts.collaboration_default.clone(),
            plan_instructions: prompts.collaboration_plan.clone(),
            default_request_user_input,
        }
    }

    /// `<collaboration_mode>{instructions}</collaboration_mode>`, no added newlines.
    pub fn block(&self, mode: Mode) -> String {
        let instructions = match mode {
            Mode::Default => &self.default_instructions,
            Mode::Plan => &self.plan_instructions,
        };
        format!("<collaboration_mode>{instructions}</collaboration_mode>")
    }

    pub fn allows_request_user_input(&self, mode: Mode) -> bool {
        mode == Mode::Plan || self.default_request_user_input
    }

    /// Adds the mode's developer message before the latest user turn, unless the history already
    /// holds exactly that block; Plan sets `reasoning_effort: "medium"` when the client set none.
    pub fn apply(&self, mode: Mode, conversation: &mut Conversation) {
        let block = self.block(mode);
        let present = conversation
            .messages()
            .any(|m| m.role == Role::Developer && *m.content.text() == *block);
        if !present {
            let at = conversation
                .items
                .iter()
                .rposition(|item| {
                    matches!(item, Item::Message(m)
                        if m.role == Role::User && !is_context_only(m.content.text_parts()))
                })
                .unwrap_or(conversation.items.len());
            conversation
                .items
                .insert(at, Item::Message(Message::text(Role::Developer, block)));
        }
        if mode == Mode::Plan && conversation.options.reasoning_effort.is_none() {
            conversation.options.reasoning_effort = Some("medium".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn collaboration() -> Collaboration {
        Collaboration {
            default_instructions: "pair with the user".into(),
            plan_instructions: "make a plan".into(),
            default_request_user_input: false,
        }
    }

    fn request(value: &serde_json::Value) -> Conversation {
        crate::protocols::chat::request::parse_conversation(value.to_string().as_bytes())
            .expect("request")
    }

    #[test]
    fn modes_and_aliases_parse() {
        for alias in [
            "default",
            "Default",
            "code",
            "pair_programming",
            "execute",
            "custom",
        ] {
            assert_eq!(Mode::parse(alias).expect(alias), Mode::Default);
        }
        assert_eq!(Mode::parse("plan").expect("plan"), Mode::Plan);
        let err = Mode::parse("yolo").expect_err("unknown");
        assert!(
            err.to_string().contains("known modes: default, plan"),
            "{err}"
        );
    }

    #[test]
    fn block_has_no_added_newlines() {
        assert_eq!(
            collaboration().block(Mode::Default),
            "<collaboration_mode>pair with the user</collaboration_mode>"
        );
        assert_eq!(
            collaboration().block(Mode::Plan),
            "<collaboration_mode>make a plan</collaboration_mode>"
        );
    }

    #[test]
    fn the_block_goes_before_the_latest_user_message_once() {
        let mut r = request(&json!({"model": "m", "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second"},
            {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"}
        ]}));
        collaboration().apply(Mode::Plan, &mut r);
        let roles: Vec<Role> = r.messages().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Developer,
                Role::User,
                Role::User
            ]
        );
        assert_eq!(
            r.messages()
                .nth(3)
                .map(|m| m.content.text().into_owned())
                .as_deref(),
            Some("<collaboration_mode>make a plan</collaboration_mode>")
        );
        assert_eq!(r.options.reasoning_effort.as_deref(), Some("medium"));
        collaboration().apply(Mode::Plan, &mut r);
        assert_eq!(
            r.messages().count(),
            6,
            "no duplicate when the exact block is present"
        );
    }

    #[test]
    fn plan_keeps_the_clients_effort_and_default_leaves_it() {
        let mut r = request(
            &json!({"model": "m", "reasoning_effort": "high", "messages": [{"role": "user", "content": "x"}]}),
        );
        collaboration().apply(Mode::Plan, &mut r);
        assert_eq!(r.options.reasoning_effort.as_deref(), Some("high"));
        let mut r = request(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}));
        collaboration().apply(Mode::Default, &mut r);
        assert_eq!(r.options.reasoning_effort, None);
    }

    #[test]
    fn request_user_input_is_a_plan_tool_unless_configured() {
        let c = collaboration();
        assert!(c.allows_request_user_input(Mode::Plan));
        assert!(!c.allows_request_user_input(Mode::Default));
        let c = Collaboration {
            default_request_user_input: true,
            ..collaboration()
        };
        assert!(c.allows_request_user_input(Mode::Default));
    }
}
