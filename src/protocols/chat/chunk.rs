//! A borrowed, read-only view of one streamed `chat.completion.chunk`: only the fields the proxy
//! reads, borrowed from the event's bytes, unknown fields skipped. The general `api::stream::Chunk`
//! keeps every unknown field through `#[serde(flatten)]`, which buffers and allocates each one:
//! several times the cost of everything else done per event. Every reader that only looks reads
//! through this view (the folder, the end of an answer) or through a leaner one when it needs
//! less: `AnswerChunkView` (one answer: the answer-event reader, the answer tap, the title
//! readers, a corrected turn's text) and `CallsChunkView` (the calls alone).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// One event's JSON read into `T`, its UTF-8 checked once, up front. serde_json's byte-slice
/// reader checks each string as it reads it, which for an answer chunk's many short strings cost
/// as much as the rest of the parse (callgrind, BENCHMARKS.md); text already checked is read
/// without it. Bytes that are not UTF-8 are read by the slice reader, for its error.
pub fn parse_event<'a, T: Deserialize<'a>>(data: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(data) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(data),
    }
}

/// One streamed chunk.
#[derive(Deserialize)]
pub struct ChunkView<'a> {
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub created: Option<i64>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
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
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// The fields a text delta rarely carries are boxed (`Rare`, 8 bytes, allocated only when there):
/// serde moves a choice through each of its `Result` layers, and at 208 bytes those moves were a
/// quarter of an answer reader's time per event.
#[derive(Deserialize, Default)]
pub struct DeltaView<'a> {
    #[serde(default, borrow, deserialize_with = "opt_rare")]
    pub role: Rare<'a>,
    /// A string, an array of `{text}` parts or one `{text}` object: read by `content_text`.
    #[serde(default, borrow)]
    pub content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "opt_rare")]
    pub reasoning_content: Rare<'a>,
    /// What some upstreams (OpenRouter, vLLM's newer builds) name `reasoning_content`.
    #[serde(default, borrow, deserialize_with = "opt_rare")]
    pub reasoning: Rare<'a>,
    /// OpenRouter's structured reasoning: `[{"type": "reasoning.text", "text": …}, …]`; read by
    /// `reasoning_text` only when neither string above is there (OpenRouter sends both forms).
    #[serde(default, borrow)]
    pub reasoning_details: Option<&'a RawValue>,
    /// The server's signature of the reasoning just sent: what the Messages upstream's reader
    /// (`upstream::messages`) puts beside `reasoning_content` from a `signature_delta`.
    #[serde(default, borrow, deserialize_with = "opt_rare")]
    pub reasoning_signature: Rare<'a>,
    /// One redacted thinking block's opaque data: what the Messages upstream's reader puts here
    /// from a `redacted_thinking` block (only that server reads it).
    #[serde(default, borrow, deserialize_with = "opt_rare")]
    pub reasoning_redacted: Rare<'a>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<CallView<'a>>>,
}

/// Only what a reader of one answer needs of a chunk (the answer-event reader, the answer tap,
/// a title's answer, a client's own title stream, a corrected turn's text): the answer's choice
/// (index 0; clients of one answer ask for one), the usage and the upstream's error. The head
/// (id, created, model, fingerprint) and any other choice are skipped, not read, and the choices
/// are not collected: no allocation but the strings that hold escapes. Every translated event,
/// and every event of an id-less turn's tap, is read this way.
#[derive(Deserialize)]
pub struct AnswerChunkView<'a> {
    #[serde(rename = "choices", default, borrow, deserialize_with = "index_zero")]
    pub answer: Option<ChoiceView<'a>>,
    #[serde(default, borrow)]
    pub usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
}

impl AnswerChunkView<'_> {
    /// The upstream's own error object in the stream, read.
    pub fn reported_error(&self) -> Option<ReportedError> {
        let raw = self.error?;
        let error: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let text = |key: &str| error.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(ReportedError {
            message: text("message"),
            code: text("code"),
            raw: raw.get().to_owned(),
        })
    }
}

/// The first choice whose index is 0, the others read past.
fn index_zero<'de, D>(deserializer: D) -> Result<Option<ChoiceView<'de>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Choices;
    impl<'de> serde::de::Visitor<'de> for Choices {
        type Value = Option<ChoiceView<'de>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of choices")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut answer = None;
            while let Some(choice) = seq.next_element::<ChoiceView<'de>>()? {
                if answer.is_none() && choice.index == 0 {
                    answer = Some(choice);
                }
            }
            Ok(answer)
        }
    }
    deserializer.deserialize_seq(Choices)
}

/// Only what a reader of tool calls needs of a chunk (`routes::correct`, which reads every
/// event of an answer that makes calls): each choice's index, call pieces and finish. Every
/// other field is skipped, not read: no UTF-8 check, no copy, no raw value kept.
#[derive(Deserialize)]
pub struct CallsChunkView<'a> {
    #[serde(default, borrow)]
    pub choices: Vec<CallsChoiceView<'a>>,
}

#[derive(Deserialize)]
pub struct CallsChoiceView<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: CallsDeltaView<'a>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub struct CallsDeltaView<'a> {
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<CallView<'a>>>,
}

#[derive(Deserialize)]
pub struct CallView<'a> {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub id: Option<Cow<'a, str>>,
    #[serde(rename = "type", default, borrow, deserialize_with = "opt_str")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionView<'a>>,
}

#[derive(Deserialize, Default)]
pub struct FunctionView<'a> {
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub arguments: Option<Cow<'a, str>>,
}

/// A string a delta rarely carries, boxed (see `DeltaView`).
pub type Rare<'a> = Option<Box<Cow<'a, str>>>;

/// `opt_str`, boxed.
fn opt_rare<'de, D>(deserializer: D) -> Result<Rare<'de>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(opt_str(deserializer)?.map(Box::new))
}

/// An optional string borrowed from the event unless it holds escapes. serde borrows a bare
/// `Cow<str>` field, but an `Option<Cow<str>>` goes through `Cow`'s own impl, which always
/// allocates a `String`: one allocation per string field of every event.
fn opt_str<'de, D>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'de>>::deserialize(deserializer)?.map(|b| b.0))
}

/// An upstream's `{"error": …}` event: its message and code when they are strings, and its text.
pub struct ReportedError {
    pub message: Option<String>,
    pub code: Option<String>,
    pub raw: String,
}

impl<'a> DeltaView<'a> {
    /// The delta's `content` text (see `content_text`); `None` when there is none or it is
    /// unreadable.
    pub fn text(&self) -> Option<Cow<'a, str>> {
        content_text(self.content?).ok().flatten()
    }

    /// The delta's reasoning, whatever the upstream names it: `reasoning_content`, else
    /// `reasoning`, else the `text` of `reasoning_details`' `reasoning.text` entries (other entry
    /// types — summaries, encrypted blobs — carry nothing readable); `None` when empty.
    pub fn reasoning_text(&mut self) -> Option<Cow<'a, str>> {
        if let Some(text) = self
            .reasoning_content
            .take()
            .or_else(|| self.reasoning.take())
            .filter(|r| !r.is_empty())
        {
            return Some(*text);
        }
        let details: Vec<Value> =
            serde_json::from_str(self.reasoning_details.take()?.get()).ok()?;
        let text: String = details
            .iter()
            .filter(|d| d.get("type").and_then(Value::as_str) == Some("reasoning.text"))
            .filter_map(|d| d.get("text").and_then(Value::as_str))
            .collect();
        (!text.is_empty()).then_some(Cow::Owned(text))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_the_same_as_the_slice_reader_reads_it_and_fails_the_same() {
        let data = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9} \\\"q\\\" \u{1F600}\"}}]}";
        let by_slice: Value = serde_json::from_slice(data.as_bytes()).expect("JSON");
        let by_event: Value = parse_event(data.as_bytes()).expect("JSON");
        assert_eq!(by_event, by_slice);
        let view: AnswerChunkView<'_> = parse_event(data.as_bytes()).expect("chunk");
        assert!(view.answer.is_some_and(|a| a.delta.content.is_some()));
        // Not UTF-8 inside a string: the slice reader's own error, word for word.
        let bad = b"{\"id\":\"\xff\"}";
        let by_slice = serde_json::from_slice::<Value>(bad)
            .err()
            .map(|e| e.to_string());
        let by_event = parse_event::<Value>(bad).err().map(|e| e.to_string());
        assert!(by_event.is_some());
        assert_eq!(by_event, by_slice);
    }

    #[test]
    fn strings_are_borrowed_unless_they_hold_escapes() {
        let data = br#"{"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"a\":1}"}}]},"finish_reason":null}]}"#;
        let chunk: ChunkView<'_> = serde_json::from_slice(data).expect("chunk");
        assert!(matches!(chunk.id, Some(Cow::Borrowed("chatcmpl-1"))));
        assert!(matches!(chunk.model, Some(Cow::Borrowed("m"))));
        let choice = &chunk.choices[0];
        assert!(matches!(
            choice.delta.role.as_deref(),
            Some(Cow::Borrowed("assistant"))
        ));
        assert!(choice.finish_reason.is_none());
        let call = &choice.delta.tool_calls.as_ref().expect("calls")[0];
        assert!(matches!(call.id, Some(Cow::Borrowed("call_1"))));
        assert!(matches!(call.kind, Some(Cow::Borrowed("function"))));
        let function = call.function.as_ref().expect("function");
        assert!(matches!(function.name, Some(Cow::Borrowed("bash"))));
        // The escaped quotes must be unescaped: an owned copy.
        assert!(matches!(&function.arguments, Some(Cow::Owned(a)) if a == r#"{"a":1}"#));
    }

    fn reasoning_of(data: &str) -> Option<String> {
        let mut chunk: ChunkView<'_> = serde_json::from_str(data).expect("chunk");
        chunk.choices[0].delta.reasoning_text().map(Cow::into_owned)
    }

    #[test]
    fn reasoning_is_read_under_each_name_the_upstreams_use() {
        let delta = |d: &str| format!(r#"{{"choices":[{{"index":0,"delta":{d}}}]}}"#);
        assert_eq!(
            reasoning_of(&delta(r#"{"reasoning_content":"a"}"#)).as_deref(),
            Some("a")
        );
        assert_eq!(
            reasoning_of(&delta(r#"{"reasoning":"b"}"#)).as_deref(),
            Some("b")
        );
        assert_eq!(
            reasoning_of(&delta(
                r#"{"reasoning_details":[{"type":"reasoning.text","text":"c1"},{"type":"reasoning.encrypted","data":"x"},{"type":"reasoning.text","text":"c2"}]}"#
            ))
            .as_deref(),
            Some("c1c2")
        );
        // OpenRouter sends the string and the details together: read once, not twice.
        assert_eq!(
            reasoning_of(&delta(
                r#"{"reasoning":"d","reasoning_details":[{"type":"reasoning.text","text":"d"}]}"#
            ))
            .as_deref(),
            Some("d")
        );
        assert_eq!(
            reasoning_of(&delta(
                r#"{"reasoning_details":[{"type":"reasoning.summary","summary":"s"}]}"#
            )),
            None
        );
        assert_eq!(reasoning_of(&delta(r#"{"reasoning_details":"odd"}"#)), None);
        assert_eq!(reasoning_of(&delta(r#"{"reasoning_content":""}"#)), None);
    }

    #[test]
    fn a_string_field_of_another_type_is_still_an_error() {
        assert!(serde_json::from_slice::<ChunkView<'_>>(br#"{"id":5}"#).is_err());
        assert!(serde_json::from_slice::<ChunkView<'_>>(br#"{"id":null,"model":null}"#).is_ok());
    }

    #[test]
    fn the_answer_view_reads_the_answers_choice_and_the_error_and_skips_the_rest() {
        let data = br#"{"id":5,"model":["odd"],"system_fingerprint":"fp","choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"x","tool_calls":[{"index":0,"id":"call_1"}]},"finish_reason":"tool_calls"},{"index":0,"delta":{"content":"again"}}],"usage":{"total_tokens":3}}"#;
        let chunk: AnswerChunkView<'_> = serde_json::from_slice(data).expect("chunk");
        let choice = chunk.answer.expect("the index-0 choice");
        assert_eq!(choice.delta.text().as_deref(), Some("x"));
        assert_eq!(choice.finish_reason.as_deref(), Some("tool_calls"));
        let call = &choice.delta.tool_calls.as_ref().expect("calls")[0];
        assert_eq!(call.id.as_deref(), Some("call_1"));
        assert!(chunk.error.is_none());

        let none: AnswerChunkView<'_> =
            serde_json::from_slice(br#"{"choices":[{"index":2,"delta":{}}]}"#).expect("chunk");
        assert!(none.answer.is_none());
        let empty: AnswerChunkView<'_> = serde_json::from_slice(b"{}").expect("chunk");
        assert!(empty.answer.is_none());
        let error: AnswerChunkView<'_> = serde_json::from_slice(
            br#"{"error":{"message":"overloaded","code":"busy"},"choices":[]}"#,
        )
        .expect("chunk");
        let reported = error.reported_error().expect("an error");
        assert_eq!(reported.message.as_deref(), Some("overloaded"));
        assert_eq!(reported.code.as_deref(), Some("busy"));
        // What ChunkView refuses, this view refuses too.
        for bad in [
            &br#"{"choices":null}"#[..],
            br#"{"choices":[{"index":"0"}]}"#,
            b"{",
        ] {
            assert!(serde_json::from_slice::<AnswerChunkView<'_>>(bad).is_err());
            assert!(serde_json::from_slice::<ChunkView<'_>>(bad).is_err());
        }
    }

    #[test]
    fn the_calls_view_reads_a_chunks_calls_and_finish_and_skips_the_rest() {
        let data = br#"{"id":5,"object":"chat.completion.chunk","model":["odd"],"system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"x","tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"total_tokens":3}}"#;
        let chunk: CallsChunkView<'_> = serde_json::from_slice(data).expect("chunk");
        let choice = &chunk.choices[0];
        assert_eq!(choice.finish_reason.as_deref(), Some("tool_calls"));
        let call = &choice.delta.tool_calls.as_ref().expect("calls")[0];
        assert_eq!(call.index, Some(1));
        assert_eq!(call.id.as_deref(), Some("call_1"));
        let function = call.function.as_ref().expect("function");
        assert_eq!(function.name.as_deref(), Some("bash"));
        assert_eq!(function.arguments.as_deref(), Some(r#"{"a":1}"#));
        // Not JSON is still not a chunk.
        assert!(serde_json::from_slice::<CallsChunkView<'_>>(b"{").is_err());
    }
}
