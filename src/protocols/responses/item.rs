//! One Responses output item as the renderer builds it (message, reasoning, function call, custom
//! tool call) and its JSON form, as `output_item.added`/`done` and `response.output` carry it.

use serde_json::{Value, json};

use crate::api::text::Text;
use crate::protocols::json_body::Slots;

pub const IN_PROGRESS: &str = "in_progress";

#[derive(Debug)]
pub enum Kind {
    Message,
    Reasoning,
    Function {
        call_id: String,
        name: String,
        namespace: Option<String>,
    },
    Custom {
        call_id: String,
        name: String,
    },
}

#[derive(Debug)]
pub struct Item {
    pub id: String,
    pub kind: Kind,
    /// Text, reasoning summary, function arguments, or the custom call's raw `{"input":…}` JSON.
    pub text: Text,
    pub done: bool,
    /// A reasoning item's `encrypted_content`: its text sealed (`conversation::seal`), when the
    /// client asked for it (`include: ["reasoning.encrypted_content"]`).
    pub sealed: Option<String>,
    /// A reasoning item's server signature (a Messages upstream's), sealed with its text.
    pub server_signature: Option<String>,
    /// A reasoning item's server redacted thinking (a Messages upstream's), sealed with it.
    pub server_redacted: Vec<String>,
}

impl Item {
    /// The custom call's input: the `input` string of its arguments, else the arguments as sent.
    pub fn custom_input(&self) -> String {
        let text = self.text.as_str();
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(mut args)) => match args.remove("input") {
                Some(Value::String(input)) => input,
                _ => text.into_owned(),
            },
            _ => text.into_owned(),
        }
    }

    /// `to_json`, its text moved into the JSON rather than copied, or, when long, taken out into
    /// `texts` with its slot left in the JSON (`json_body`).
    pub fn into_json(mut self, status: &str, slots: &Slots, texts: &mut Vec<Text>) -> Value {
        let text = std::mem::take(&mut self.text);
        let mut value = self.to_json(status);
        let slot = match &self.kind {
            Kind::Message if status != IN_PROGRESS => value.pointer_mut("/content/0/text"),
            Kind::Reasoning => value.pointer_mut("/summary/0/text"),
            Kind::Function { .. } => value.get_mut("arguments"),
            _ => None,
        };
        match slot {
            Some(slot) => *slot = Value::String(slots.place(text, texts)),
            None => {
                // No slot for the text here: the item as `to_json` writes it, with its text.
                self.text = text;
                value = self.to_json(status);
            }
        }
        value
    }

    pub fn to_json(&self, status: &str) -> Value {
        match &self.kind {
            // An item just added has no content part yet (`content_part.added` follows).
            Kind::Message if status == IN_PROGRESS => json!({
                "type": "message", "id": self.id, "status": status, "role": "assistant",
                "content": [],
            }),
            Kind::Message => json!({
                "type": "message", "id": self.id, "status": status, "role": "assistant",
                "content": [{"type": "output_text", "text": self.text, "annotations": []}],
            }),
            Kind::Reasoning => {
                let mut item = json!({
                    "type": "reasoning", "id": self.id,
                    "summary": [{"type": "summary_text", "text": self.text}],
                });
                if let Some(sealed) = &self.sealed {
                    item["encrypted_content"] = json!(sealed);
                }
                item
            }
            Kind::Function {
                call_id,
                name,
                namespace,
            } => {
                let mut item = json!({
                    "type": "function_call", "id": self.id, "status": status,
                    "call_id": call_id, "name": name, "arguments": self.text,
                });
                if let Some(namespace) = namespace {
                    item["namespace"] = json!(namespace);
                }
                item
            }
            Kind::Custom { call_id, name } => json!({
                "type": "custom_tool_call", "id": self.id, "status": status,
                "call_id": call_id, "name": name, "input": self.custom_input(),
            }),
        }
    }
}
