//! The Anthropic Messages request as it comes off the wire: typed fields only, no conversion
//! (`convert` turns it into the conversation model, `tokens` estimates it).
//!
//! Lenient by design: every field Claude Code sends is typed, anything else is ignored — never a
//! 400 for an unknown field or block type, because Claude Code answers a 400 by retrying up to six
//! times with features stripped. Only a body that is not a Messages request at all (not JSON, no
//! `messages` array) is refused.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct MessagesRequest {
    #[serde(default)]
    pub model: String,
    pub messages: Vec<InMessage>,
    #[serde(default)]
    pub system: Option<Text>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub thinking: Option<Thinking>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
    #[serde(default)]
    pub output_config: Option<OutputConfig>,
    // `context_management` (server-side context editing) is ignored: the upstream keeps no
    // context between requests, so there is nothing to edit.
}

#[derive(Debug, Deserialize)]
pub struct InMessage {
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub content: Option<Text>,
}

/// `content` (and `system`): a string or an array of blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Text {
    Plain(String),
    Blocks(Vec<Block>),
}

/// One content block; its `type` says which fields matter. Unknown types are skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block {
    #[serde(rename = "type")]
    pub kind: BlockKind,
    pub text: Option<String>,
    /// `tool_use`.
    pub id: Option<String>,
    pub name: Option<String>,
    pub input: Option<Value>,
    /// `tool_result`.
    pub tool_use_id: Option<String>,
    pub content: Option<Text>,
    pub is_error: Option<bool>,
    /// `image`.
    pub source: Option<ImageSource>,
    /// `thinking`: the readable reasoning and its signature.
    pub thinking: Option<String>,
    pub signature: Option<String>,
    /// `redacted_thinking`: the encrypted reasoning.
    pub data: Option<String>,
}

/// A content block's `type`: the one list of the block kinds the front reads and renders.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Text,
    ToolUse,
    ToolResult,
    Image,
    Thinking,
    RedactedThinking,
    /// Any other kind (`document`, `server_tool_use`, …), or none: skipped.
    #[default]
    #[serde(other)]
    Other,
}

impl BlockKind {
    /// The kind's `type` on the wire (`Other` has none of its own).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::ToolUse => "tool_use",
            Self::ToolResult => "tool_result",
            Self::Image => "image",
            Self::Thinking => "thinking",
            Self::RedactedThinking => "redacted_thinking",
            Self::Other => "other",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ImageSource {
    #[serde(rename = "type")]
    pub kind: String,
    pub media_type: Option<String>,
    pub data: Option<String>,
    pub url: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ToolChoice {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct Thinking {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub budget_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct Metadata {
    #[serde(default)]
    pub user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct OutputConfig {
    #[serde(default)]
    pub effort: Option<String>,
    #[serde(default)]
    pub format: Option<OutputFormat>,
}

#[derive(Debug, Deserialize)]
pub struct OutputFormat {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub schema: Option<Value>,
}

impl Metadata {
    /// Claude Code's `user_id` is a JSON text `{"device_id","account_uuid","session_id"}`.
    pub fn session_id(&self) -> Option<String> {
        let parsed: Value = serde_json::from_str(self.user_id.as_deref()?).ok()?;
        parsed
            .get("session_id")?
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_kinds_read_as_their_wire_names_and_anything_else_is_other() {
        let kinds = [
            BlockKind::Text,
            BlockKind::ToolUse,
            BlockKind::ToolResult,
            BlockKind::Image,
            BlockKind::Thinking,
            BlockKind::RedactedThinking,
        ];
        for kind in kinds {
            let block: Block =
                serde_json::from_value(serde_json::json!({"type": kind.as_str()})).expect("block");
            assert_eq!(block.kind, kind);
        }
        for other in [
            serde_json::json!({"type": "server_tool_use"}),
            serde_json::json!({"type": "document"}),
            serde_json::json!({}),
        ] {
            let block: Block = serde_json::from_value(other).expect("block");
            assert_eq!(block.kind, BlockKind::Other);
        }
    }
}
