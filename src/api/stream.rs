//! Chat Completions response shapes: the streamed `chat.completion.chunk` and the folded
//! `chat.completion`. Unknown fields are kept in `extra` so a re-emitted chunk loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::text::Text;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Chunk {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Delta {
    /// Text of `content` given as a string, an array of `{text}` parts or one `{text}` object.
    pub fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ToolCallDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// The non-streaming answer, as folded from a stream.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Completion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Completion {
    /// As a JSON value, each text joined once and moved in: `serde_json::to_value` would copy a
    /// text, and build the copy of one held in pieces by doubling.
    pub fn into_value(mut self) -> serde_json::Result<Value> {
        let texts: Vec<_> = (self.choices.iter_mut())
            .map(|c| {
                let message = &mut c.message;
                // Left empty, not taken: the keys keep their places in the JSON.
                let content = message.content.as_mut().map(std::mem::take);
                let reasoning = message.reasoning_content.as_mut().map(std::mem::take);
                (
                    content.map(Text::into_string),
                    reasoning.map(Text::into_string),
                )
            })
            .collect();
        let mut value = serde_json::to_value(self)?;
        let choices = value.get_mut("choices").and_then(Value::as_array_mut);
        for (choice, (content, reasoning)) in choices.into_iter().flatten().zip(texts) {
            let Some(message) = choice.get_mut("message").and_then(Value::as_object_mut) else {
                continue;
            };
            if let Some(content) = content {
                message.insert("content".into(), Value::String(content));
            }
            if let Some(reasoning) = reasoning {
                message.insert("reasoning_content".into(), Value::String(reasoning));
            }
        }
        Ok(value)
    }

    /// The bytes of its text, reasoning and call arguments: what its JSON is mostly made of.
    pub fn text_bytes(&self) -> usize {
        self.choices
            .iter()
            .map(|c| {
                let m = &c.message;
                m.content.as_ref().map_or(0, Text::len)
                    + m.reasoning_content.as_ref().map_or(0, Text::len)
                    + m.tool_calls.as_ref().map_or(0, |calls| {
                        calls.iter().map(|t| t.function.arguments.len()).sum()
                    })
            })
            .sum()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub message: CompletionMessage,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionMessage {
    pub role: String,
    /// Held in pieces as it was folded (`text::Text`): a whole answer's text is never copied to
    /// grow.
    pub content: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<CompletedToolCall>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletedToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: CompletedFunction,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletedFunction {
    pub name: String,
    pub arguments: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn into_value_is_to_value_with_the_texts_moved_in() {
        let mut long = Text::new();
        for _ in 0..300 {
            long.push_str(&"long \"text\" ".repeat(1000));
        }
        assert!(long.pieces().count() > 1);
        let message = |content, reasoning| CompletionMessage {
            role: "assistant".into(),
            content,
            reasoning_content: reasoning,
            tool_calls: Some(vec![CompletedToolCall {
                id: "c1".into(),
                kind: "function".into(),
                function: CompletedFunction {
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                },
            }]),
        };
        let completion = Completion {
            id: "x".into(),
            object: "chat.completion".into(),
            created: 7,
            model: "m".into(),
            choices: vec![
                CompletionChoice {
                    index: 0,
                    message: message(Some(long), Some(Text::from("why"))),
                    finish_reason: Some("tool_calls".into()),
                },
                CompletionChoice {
                    index: 1,
                    message: message(None, None),
                    finish_reason: None,
                },
            ],
            usage: Some(json!({"total_tokens": 3})),
            extra: Map::new(),
        };
        let expected = serde_json::to_value(&completion).expect("value");
        let value = completion.into_value().expect("value");
        assert_eq!(value, expected);
        // Key order too (`preserve_order`): the texts took their keys' places.
        assert_eq!(value.to_string(), expected.to_string());
    }
}
