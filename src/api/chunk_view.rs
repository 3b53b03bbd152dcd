//! A borrowed, read-only view of one streamed `chat.completion.chunk`: only the fields the proxy
//! reads, borrowed from the event's bytes, unknown fields skipped. The general `stream::Chunk`
//! keeps every unknown field through `#[serde(flatten)]`, which buffers and allocates each one:
//! several times the cost of everything else done per event. Readers that only look (the folder,
//! the answer-event reader, the answer tap) use this view.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// One streamed chunk.
#[derive(Deserialize)]
pub struct ChunkView<'a> {
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub created: Option<i64>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub system_fingerprint: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub choices: Vec<ChoiceView<'a>>,
    #[serde(default, borrow)]
    pub usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub struct ChoiceView<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: DeltaView<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub struct DeltaView<'a> {
    #[serde(default, borrow)]
    pub role: Option<Cow<'a, str>>,
    /// A string, an array of `{text}` parts or one `{text}` object: read by `content_text`.
    #[serde(default, borrow)]
    pub content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// What some upstreams (OpenRouter, vLLM's newer builds) name `reasoning_content`.
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<CallView<'a>>>,
}

#[derive(Deserialize)]
pub struct CallView<'a> {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionView<'a>>,
}

#[derive(Deserialize, Default)]
pub struct FunctionView<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

/// A delta's `content` text: a JSON string (borrowed unless it holds escapes), or the `text` of
/// `{text}` parts or of one `{text}` object; `None` for anything else.
pub fn content_text(raw: &RawValue) -> Result<Option<Cow<'_, str>>, serde_json::Error> {
    let json = raw.get();
    if json.starts_with('"') {
        return Ok(Some(match serde_json::from_str::<&str>(json) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => Cow::Owned(serde_json::from_str::<String>(json)?),
        }));
    }
    Ok(match serde_json::from_str::<Value>(json)? {
        Value::Array(parts) => Some(Cow::Owned(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<String>(),
        )),
        Value::Object(o) => o
            .get("text")
            .and_then(Value::as_str)
            .map(|t| Cow::Owned(t.to_owned())),
        _ => None,
    })
}
