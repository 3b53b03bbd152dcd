//! The borrowed look the call translator (`calls::StreamCalls`) takes at one streamed chunk: the
//! head fields it repeats in the chunks it emits, the call deltas, and for every choice only
//! whether its delta holds anything besides calls. Most events of a translated call are argument
//! pieces that are held and dropped; reading them this way allocates nothing, where the general
//! `api::stream::Chunk` buffers every field through `#[serde(flatten)]`. A chunk that has to be
//! re-emitted without its held calls is still parsed as a `Chunk` (that keeps unknown fields).
//!
//! The field types are `Chunk`'s, so a chunk one of them refuses the other refuses too.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

use super::chunk::CallView;

#[derive(Deserialize)]
pub struct CallChunk<'a> {
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub object: Option<Cow<'a, str>>,
    #[serde(default)]
    pub created: Option<i64>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub choices: Vec<CallChoice<'a>>,
    /// Only whether it is there (and not `null`).
    #[serde(default)]
    pub usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
pub struct CallChoice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: CallDelta<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// A delta's calls, and whether it carries anything else a client would be sent (a role, content,
/// reasoning, or any field this proxy does not know).
#[derive(Default)]
pub struct CallDelta<'a> {
    pub tool_calls: Option<Vec<CallView<'a>>>,
    pub has_more: bool,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Role,
    Content,
    ReasoningContent,
    ToolCalls,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for CallDelta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DeltaVisitor(std::marker::PhantomData))
    }
}

struct DeltaVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for DeltaVisitor<'a> {
    type Value = CallDelta<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat completion chunk delta")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut delta = CallDelta::default();
        while let Some(field) = map.next_key::<Field>()? {
            // `null` is absence, as for `Chunk`'s `Option` fields; an unknown field counts
            // whatever its value (`Chunk` keeps it in `extra`).
            let more = match field {
                Field::Role | Field::ReasoningContent => {
                    map.next_value::<Option<Cow<'de, str>>>()?.is_some()
                }
                Field::Content => map.next_value::<Option<IgnoredAny>>()?.is_some(),
                Field::ToolCalls => {
                    delta.tool_calls = map.next_value()?;
                    false
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    true
                }
            };
            delta.has_more |= more;
        }
        Ok(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(json: &str) -> CallDelta<'_> {
        serde_json::from_str(json).expect("a delta")
    }

    #[test]
    fn only_calls_and_nulls_are_nothing_more() {
        let d = delta(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"x"}}],"role":null,"content":null}"#,
        );
        assert_eq!(d.tool_calls.map(|c| c.len()), Some(1));
        assert!(!d.has_more);
    }

    #[test]
    fn content_role_reasoning_or_an_unknown_field_are_more() {
        for json in [
            r#"{"content":""}"#,
            r#"{"role":"assistant"}"#,
            r#"{"reasoning_content":"r"}"#,
            r#"{"refusal":null}"#,
        ] {
            assert!(delta(json).has_more, "{json}");
        }
    }

    #[test]
    fn a_field_of_the_wrong_type_is_refused_as_chunk_refuses_it() {
        for json in [
            r#"{"id":1,"choices":[]}"#,
            r#"{"choices":[{"delta":{"role":5}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}"#,
        ] {
            assert!(
                serde_json::from_str::<CallChunk<'_>>(json).is_err(),
                "{json}"
            );
            assert!(
                serde_json::from_str::<crate::api::stream::Chunk>(json).is_err(),
                "{json}"
            );
        }
    }
}
