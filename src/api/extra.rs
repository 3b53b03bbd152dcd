//! Reading a wire struct that keeps every key it does not know in an `extra` map, without serde's
//! `#[serde(flatten)]`. A flattened struct is read in two passes: serde first buffers the whole
//! object into its private `Content` tree (every string copied, every nested object too), then
//! reads the fields out of that copy. For a request's top level that is the whole body twice:
//! most of the parse of a 32 KB agent turn (callgrind, BENCHMARKS.md). `deserialize_with_extra!`
//! reads the keys as they come: a known key into its field, any other into `extra` as a `Value`.
//! Serialization keeps `#[serde(flatten)]`, which costs nothing there. `text_or_list` does the same
//! for a field that is a string or a list, which `#[serde(untagged)]` buffered and tried twice.
//!
//! What the derive did is kept: a missing required field is serde's `missing field` error, a
//! known key given twice is `duplicate field`, an unknown key given twice keeps its first place
//! with the last value (`Map::insert`), and only a JSON object is accepted.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, Visitor};

/// An object's key, borrowed from the body when it holds no escape.
pub(crate) struct Key<'de>(Cow<'de, str>);

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A string or a list, read at once (not buffered and tried in turn, as `untagged` does): `T`
/// from the string, `U` from each element of the list.
struct TextOrList<T, U>(std::marker::PhantomData<(T, U)>);

impl<'de, T, U> Visitor<'de> for TextOrList<T, U>
where
    T: From<String> + From<Vec<U>>,
    U: Deserialize<'de>,
{
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or a list")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
        Ok(T::from(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<T, E> {
        Ok(T::from(text))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        Vec::<U>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(T::from)
    }
}

/// A value that is a string or a list (`TextOrList`), as `untagged` would read it but in one pass.
pub(crate) fn text_or_list<'de, T, U, D>(deserializer: D) -> Result<T, D::Error>
where
    T: From<String> + From<Vec<U>>,
    U: Deserialize<'de>,
    D: Deserializer<'de>,
{
    deserializer.deserialize_any(TextOrList::<T, U>(std::marker::PhantomData))
}

/// `Deserialize` for a struct of named fields plus `extra: serde_json::Map<String, Value>`.
/// `required` fields must be there; `optional` ones take their type's `Default` when absent (as
/// `#[serde(default)]`). Each field is named with its wire key.
macro_rules! deserialize_with_extra {
    (
        $ty:ident,
        required { $($req:ident : $req_key:literal),* $(,)? }
        optional { $($opt:ident : $opt_key:literal),* $(,)? }
    ) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> serde::de::Visitor<'de> for Fields {
                    type Value = $ty;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        $(let mut $req = None;)*
                        $(let mut $opt = None;)*
                        let mut extra = serde_json::Map::new();
                        while let Some(key) = map.next_key::<$crate::api::extra::Key<'de>>()? {
                            match key.as_str() {
                                $($req_key => {
                                    if $req.is_some() {
                                        return Err(serde::de::Error::duplicate_field($req_key));
                                    }
                                    $req = Some(map.next_value()?);
                                })*
                                $($opt_key => {
                                    if $opt.is_some() {
                                        return Err(serde::de::Error::duplicate_field($opt_key));
                                    }
                                    $opt = Some(map.next_value()?);
                                })*
                                _ => {
                                    let value: serde_json::Value = map.next_value()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($ty {
                            $($req: $req.ok_or_else(|| serde::de::Error::missing_field($req_key))?,)*
                            $($opt: $opt.unwrap_or_default(),)*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(Fields)
            }
        }
    };
}

pub(crate) use deserialize_with_extra;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::chat::{Arguments, ChatRequest, Content};

    fn chat(body: &str) -> Result<ChatRequest, String> {
        serde_json::from_str(body).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_keys_are_kept_in_their_order_at_every_level() {
        let request = chat(
            r#"{"z":1,"model":"m","a":{"b":[1]},"messages":[{"x":"y","role":"user","content":"hi","w\u0041":2}],"stream":true}"#,
        )
        .expect("request");
        assert_eq!(request.model, "m");
        assert_eq!(request.stream, Some(true));
        let keys: Vec<&str> = request.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(request.extra["a"], json!({"b": [1]}));
        let message = &request.messages[0];
        let keys: Vec<&str> = message.extra.keys().map(String::as_str).collect();
        // A key with an escape is read (and kept) unescaped.
        assert_eq!(keys, ["x", "wA"]);
        // Written back: the known fields, then the others in their order.
        let written = serde_json::to_value(&request).expect("written");
        assert_eq!(written["z"], 1);
        assert_eq!(written["messages"][0]["wA"], 2);
    }

    #[test]
    fn what_the_derive_refused_is_still_refused_in_its_words() {
        let missing = chat(r#"{"messages":[]}"#).expect_err("no model");
        assert!(missing.starts_with("missing field `model`"), "{missing}");
        let missing = chat(r#"{"model":"m","messages":[{"content":"x"}]}"#).expect_err("no role");
        assert!(missing.starts_with("missing field `role`"), "{missing}");
        let twice = chat(r#"{"model":"m","model":"n","messages":[]}"#).expect_err("twice");
        assert!(twice.starts_with("duplicate field `model`"), "{twice}");
        let twice = chat(r#"{"model":"m","messages":[],"stream":null,"stream":true}"#);
        assert!(
            twice
                .expect_err("twice")
                .starts_with("duplicate field `stream`")
        );
        let not_object = chat(r#"["m",[]]"#).expect_err("an array");
        assert!(
            not_object.contains("expected struct ChatRequest"),
            "{not_object}"
        );
        // An unknown key given twice keeps its first place and its last value, as before.
        let request = chat(r#"{"k":1,"model":"m","k":2,"messages":[]}"#).expect("request");
        assert_eq!(request.extra.keys().collect::<Vec<_>>(), ["k"]);
        assert_eq!(request.extra["k"], 2);
    }

    #[test]
    fn content_and_arguments_take_each_of_their_shapes() {
        let request = chat(
            r#"{"model":"m","messages":[
                {"role":"user","content":"plain"},
                {"role":"user","content":[{"type":"text","text":"a part","cache_control":{"type":"ephemeral"}}]},
                {"role":"user","content":null},
                {"role":"assistant","tool_calls":[
                    {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
                    {"id":"c2","type":"function","function":{"name":"g","arguments":{"b":2}}}
                ]}
            ]}"#,
        )
        .expect("request");
        assert!(matches!(&request.messages[0].content, Some(Content::Text(t)) if t == "plain"));
        let Some(Content::Parts(parts)) = &request.messages[1].content else {
            panic!("parts")
        };
        assert_eq!(parts[0].text(), Some("a part"));
        assert_eq!(
            parts[0].extra["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(request.messages[2].content.is_none());
        let calls = request.messages[3].tool_calls.as_ref().expect("calls");
        assert!(matches!(&calls[0].function.arguments, Arguments::Text(t) if t == r#"{"a":1}"#));
        assert!(
            matches!(&calls[1].function.arguments, Arguments::Json(v) if *v == json!({"b": 2}))
        );
        // Content of neither shape is refused, naming both.
        let wrong = chat(r#"{"model":"m","messages":[{"role":"user","content":3}]}"#);
        assert!(
            wrong
                .expect_err("a number")
                .contains("expected a string or a list")
        );
    }

    #[test]
    fn a_responses_request_reads_its_input_either_way_and_keeps_the_rest() {
        use crate::protocols::responses::request::{Input, MessageContent, ResponsesRequest};
        let text: ResponsesRequest =
            serde_json::from_str(r#"{"model":"m","input":"hi","store":false}"#).expect("text");
        assert!(matches!(text.input, Some(Input::Text(t)) if t == "hi"));
        assert_eq!(text.extra["store"], false);
        let items: ResponsesRequest = serde_json::from_str(
            r#"{"include":["reasoning.encrypted_content"],"model":"m","input":[
                {"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},
                {"type":"function_call_output","call_id":"c","output":"done"}
            ]}"#,
        )
        .expect("items");
        let Some(Input::Items(items)) = items.input else {
            panic!("items")
        };
        assert_eq!(items.len(), 2);
        let crate::protocols::responses::request::InputItem::Other(output) = &items[1] else {
            panic!("an output")
        };
        assert!(matches!(&output.output, Some(MessageContent::Text(t)) if t == "done"));
        let missing = serde_json::from_str::<ResponsesRequest>(r#"{"input":"hi"}"#);
        assert!(
            missing
                .expect_err("no model")
                .to_string()
                .starts_with("missing field `model`")
        );
    }
}
