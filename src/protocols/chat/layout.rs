//! How one upstream lays out a stream's chunks: every text chunk alike but for its text, every
//! piece of a call alike but for its arguments. Most of an answer is such chunks, and parsing
//! each in full (serde_json, about 6k instructions for a ~250-byte chunk) was most of what the
//! proxy spent per event wherever it reads an answer (BENCHMARKS.md). A reader that parsed a
//! chunk in full keeps the bytes around that one string (`Layout`); the next chunk with the same
//! bytes around one whole JSON string is that chunk with this string instead (JSON reads a
//! string in a value's place as the same tree), so it is read by comparing bytes and reading the
//! string alone. Anything else is parsed in full, and may be learnt in turn.
//!
//! Readers: the folder, the answer-event reader and the answer tap learn a text chunk or a call
//! piece (`LearntChunk`); `routes::correct` reads call pieces through `CallPieces`.
//!
//! Owns: the layout, what a learnt chunk said besides its string, when a chunk is plain enough to
//! learn. Must not: read a chunk differently from the full parse (its tests hold every reader
//! to it).

use std::borrow::Cow;

use super::chunk::{
    AnswerChunkView, CallView, CallsChunkView, ChunkView, DeltaView, FunctionView, parse_event,
};

/// Where a string is in an event: from its opening quote to just past its closing one.
pub type Span = (usize, usize);

/// The bytes around one string of a chunk parsed in full.
#[derive(Default)]
pub struct Layout {
    /// The bytes before the string, then those after it.
    around: Vec<u8>,
    split: usize,
}

impl Layout {
    /// Keeps what is around `span` in `data` (the buffer is reused).
    pub fn learn(&mut self, data: &[u8], (start, end): Span) {
        self.around.clear();
        self.around.extend_from_slice(&data[..start]);
        self.around.extend_from_slice(&data[end..]);
        self.split = start;
    }

    /// The string `data` holds where the learnt chunk held its own, read as JSON reads it;
    /// `None` if `data` is laid out otherwise (not one whole string between the same bytes).
    pub fn string_in<'a>(&self, data: &'a [u8]) -> Option<Cow<'a, str>> {
        let (before, after) = self.around.split_at(self.split);
        let middle = data.strip_prefix(before)?.strip_suffix(after)?;
        if middle.first() != Some(&b'"') {
            return None;
        }
        // The bytes around it were UTF-8 in the learnt chunk and end at ASCII quotes.
        let middle = std::str::from_utf8(middle).ok()?;
        match serde_json::from_str::<&str>(middle) {
            Ok(text) => Some(Cow::Borrowed(text)),
            Err(_) => serde_json::from_str::<String>(middle).ok().map(Cow::Owned),
        }
    }
}

/// Where `text`, a string borrowed from `data` by a full parse, is in it, quotes included;
/// `None` if it is not borrowed from `data` as one whole string.
fn span_of(data: &[u8], text: &str) -> Option<Span> {
    let start = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
    let end = start + text.len();
    let quoted = text.starts_with('"') && text.ends_with('"') && text.len() >= 2;
    (quoted && data.get(start..end) == Some(text.as_bytes())).then_some((start, end))
}

/// A plain chunk a reader parsed in full, and what it said besides its one string (its text, or
/// its one call piece's arguments): its role, its finish and that call piece. What a reader does
/// with them is its own: it replays them for a chunk laid out alike.
pub struct LearntChunk {
    layout: Layout,
    pub role: Option<String>,
    pub finish_reason: Option<String>,
    /// The chunk was one call piece (its arguments the string): the rest of it.
    pub call: Option<LearntPiece>,
}

/// A learnt call piece but for its arguments.
pub struct LearntPiece {
    index: Option<u32>,
    id: Option<String>,
    kind: Option<String>,
    name: Option<String>,
}

impl LearntPiece {
    /// The call's id, if the piece named it.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The piece as a chunk laid out alike names it, with these arguments.
    pub fn with_arguments<'a>(&self, arguments: Cow<'a, str>) -> CallView<'a> {
        let owned = |text: &Option<String>| text.clone().map(Cow::Owned);
        CallView {
            index: self.index,
            id: owned(&self.id),
            kind: owned(&self.kind),
            function: Some(FunctionView {
                name: owned(&self.name),
                arguments: Some(arguments),
            }),
        }
    }
}

impl LearntChunk {
    /// The string of a chunk laid out as the learnt one (its text, or its piece's arguments).
    pub fn string_in<'a>(&self, data: &'a [u8]) -> Option<Cow<'a, str>> {
        self.layout.string_in(data)
    }

    /// Learns `chunk` (`data` parsed as a `ChunkView`, the folder's) into `slot` if it is plain:
    /// no error and no usage, one choice, index 0 (see `learn`).
    pub fn learn_chunk(slot: &mut Option<Self>, data: &[u8], chunk: &ChunkView<'_>) {
        let ([choice], None, None) = (chunk.choices.as_slice(), chunk.error, chunk.usage) else {
            return;
        };
        if choice.index == 0 {
            let finish = choice.finish_reason.as_deref();
            Self::learn(slot, data, &choice.delta, finish);
        }
    }

    /// Learns `chunk` (`data` parsed as an `AnswerChunkView`: the answer-event reader's, the
    /// tap's) into `slot` if it is plain: no error and no usage (see `learn`).
    pub fn learn_answer(slot: &mut Option<Self>, data: &[u8], chunk: &AnswerChunkView<'_>) {
        if let (Some(choice), None, None) = (&chunk.answer, chunk.error, chunk.usage) {
            let finish = choice.finish_reason.as_deref();
            Self::learn(slot, data, &choice.delta, finish);
        }
    }

    /// A delta with no reasoning of any kind and either a content string and no calls, or no
    /// content and one call piece whose arguments the parse borrowed (a string without escapes:
    /// its place is known).
    fn learn(slot: &mut Option<Self>, data: &[u8], delta: &DeltaView<'_>, finish: Option<&str>) {
        let plain = delta.reasoning_content.is_none()
            && delta.reasoning.is_none()
            && delta.reasoning_details.is_none()
            && delta.reasoning_signature.is_none()
            && delta.reasoning_redacted.is_none();
        if !plain {
            return;
        }
        let (span, call) = match (delta.content, delta.tool_calls.as_deref()) {
            (Some(content), None) => (span_of(data, content.get()), None),
            (None, Some([call])) => {
                let function = call.function.as_ref();
                let (span, name) = match function {
                    Some(FunctionView {
                        name,
                        arguments: Some(Cow::Borrowed(arguments)),
                    }) => (quoted_span(data, arguments), name),
                    _ => return,
                };
                let piece = LearntPiece {
                    index: call.index,
                    id: call.id.as_deref().map(str::to_owned),
                    kind: call.kind.as_deref().map(str::to_owned),
                    name: name.as_deref().map(str::to_owned),
                };
                (span, Some(piece))
            }
            _ => return,
        };
        let Some(span) = span else {
            return;
        };
        let mut layout = slot.take().map(|l| l.layout).unwrap_or_default();
        layout.learn(data, span);
        *slot = Some(Self {
            layout,
            role: delta.role.as_deref().map(|role| role.to_string()),
            finish_reason: finish.map(str::to_owned),
            call,
        });
    }
}

/// One piece of a call, as a chunk's `tool_calls` entry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPiece<'a> {
    pub index: Option<u32>,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
}

/// An answer's call pieces, chunk by chunk (`routes::correct`): a chunk laid out as the last
/// one-piece chunk parsed in full is read by its arguments alone.
#[derive(Default)]
pub struct CallPieces {
    learnt: Option<LearntCall>,
    /// Tests read with every chunk parsed, to hold the learnt layouts to it.
    #[cfg(test)]
    parses_every_chunk: bool,
    /// Chunks read by a learnt layout (tests).
    #[cfg(test)]
    read_by_layout: usize,
}

/// A chunk of one call piece read in full, and all it said but the arguments.
struct LearntCall {
    layout: Layout,
    piece: CallPiece<'static>,
}

impl CallPieces {
    /// Each call piece of the answer's choice (index 0) in `data`, handed to `note` in order;
    /// whether the chunk holds a piece or names a finish. A chunk that does not parse holds
    /// nothing.
    pub fn read(&mut self, data: &[u8], mut note: impl FnMut(&CallPiece<'_>)) -> bool {
        if let Some(learnt) = &self.learnt
            && let Some(arguments) = learnt.layout.string_in(data)
        {
            // The learnt chunk's one piece, with these arguments: it holds.
            note(&CallPiece {
                arguments: Some(arguments),
                ..learnt.piece.clone()
            });
            #[cfg(test)]
            {
                self.read_by_layout += 1;
            }
            return true;
        }
        let Ok(chunk) = parse_event::<CallsChunkView<'_>>(data) else {
            return false;
        };
        let mut holds = false;
        for choice in chunk.choices.iter().filter(|c| c.index == 0) {
            holds |= choice.finish_reason.is_some();
            for call in choice.delta.tool_calls.iter().flatten() {
                holds = true;
                let function = call.function.as_ref();
                note(&CallPiece {
                    index: call.index,
                    id: call.id.clone(),
                    name: function.and_then(|f| f.name.clone()),
                    arguments: function.and_then(|f| f.arguments.clone()),
                });
            }
        }
        self.learn(data, &chunk);
        holds
    }

    /// Learns a chunk of one choice (index 0) with one call piece whose arguments the parse
    /// borrowed (a string without escapes: its place is known).
    fn learn(&mut self, data: &[u8], chunk: &CallsChunkView<'_>) {
        #[cfg(test)]
        if self.parses_every_chunk {
            return;
        }
        let [choice] = chunk.choices.as_slice() else {
            return;
        };
        let (0, Some([call])) = (choice.index, choice.delta.tool_calls.as_deref()) else {
            return;
        };
        let function = call.function.as_ref();
        let Some(Cow::Borrowed(arguments)) = function.and_then(|f| f.arguments.as_ref()) else {
            return;
        };
        // The parse borrowed the string's text: its quotes are the bytes either side.
        let Some((start, end)) = quoted_span(data, arguments) else {
            return;
        };
        let owned = |text: &Option<Cow<'_, str>>| text.as_deref().map(|t| Cow::Owned(t.to_owned()));
        let mut layout = self.learnt.take().map(|l| l.layout).unwrap_or_default();
        layout.learn(data, (start, end));
        self.learnt = Some(LearntCall {
            layout,
            piece: CallPiece {
                index: call.index,
                id: owned(&call.id),
                name: owned(&function.and_then(|f| f.name.clone())),
                arguments: None,
            },
        });
    }
}

/// The span of a string's text borrowed from `data`, widened to its quotes.
fn quoted_span(data: &[u8], text: &str) -> Option<Span> {
    let start = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
    let end = start + text.len();
    let quoted = start > 0 && data.get(start - 1) == Some(&b'"') && data.get(end) == Some(&b'"');
    (quoted && data.get(start..end) == Some(text.as_bytes())).then_some((start - 1, end + 1))
}

/// A `bash` call streamed as the readers' tests need it: its first piece with its id and name,
/// then pieces alike but for their arguments (` -la` the first without escapes, so it is learnt
/// and the two after it are read by its layout), then the finish.
#[cfg(test)]
pub(crate) fn a_call_in_pieces() -> String {
    let piece = |arguments: &str| {
        format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{arguments}\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        )
    };
    [
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n".to_owned(),
        piece("{\\\"command\\\":\\\"ls"),
        piece(" -la"),
        piece(" src"),
        piece("\\\"}"),
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// A stream of `a_chunk`s as the readers' property tests read them, `DONE` at its end.
#[cfg(test)]
pub(crate) fn a_stream() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::strategy::Strategy;
    proptest::collection::vec(a_chunk(), 1..12).prop_map(|chunks| {
        chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .chain(["data: [DONE]\n\n".to_owned()])
            .collect()
    })
}

/// A chunk as the readers' property tests stream them: mostly text chunks and call pieces laid
/// out alike (with and without escapes, an index, a role, a finish), and the others a reader
/// must parse: another layout, reasoning, another choice, usage, a whole call, an error, a
/// content array, a chunk that does not parse.
#[cfg(test)]
fn a_chunk() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let text =
        || any::<String>().prop_map(|t| serde_json::to_string(&t).expect("a string serializes"));
    prop_oneof![
        4 => text().prop_map(|t| format!(r#"{{"id":"c","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":{t}}},"finish_reason":null}}]}}"#)),
        2 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":{t}}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"role":"assistant","content":{t}}},"finish_reason":null}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"role":"tool","content":{t}}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":{t}}},"finish_reason":"stop"}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"id":"c","x":[1],"choices":[{{"index":0,"delta":{{"content":{t}}},"finish_reason":null}}]}}"#)),
        3 => "[a-z {}:]{0,8}".prop_map(|a| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":"{a}"}}}}]}},"finish_reason":null}}]}}"#)),
        1 => "[a-z ]{0,8}".prop_map(|a| format!(r#"{{"choices":[{{"index":0,"delta":{{"role":"assistant","tool_calls":[{{"index":1,"id":"k2","type":"function","function":{{"name":"w","arguments":"{a}"}}}}]}}}}]}}"#)),
        1 => "[a-z ]{0,8}".prop_map(|a| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"function":{{"arguments":"{a}"}}}}]}},"finish_reason":"tool_calls"}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{t}}}}}]}},"finish_reason":null}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"reasoning_content":{t},"content":"x"}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":1,"delta":{{"content":{t}}}}},{{"index":0,"delta":{{"content":"z"}}}}]}}"#)),
        1 => text().prop_map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":{t}}}}}],"usage":{{"prompt_tokens":1}}}}"#)),
        1 => Just(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"k","function":{"name":"n","arguments":"{}"}}]}}]}"#.to_owned()),
        1 => Just(r#"{"error":{"message":"overloaded","code":"busy"}}"#.to_owned()),
        1 => Just(r#"{"choices":[{"index":0,"delta":{"content":["a"]}}]}"#.to_owned()),
        1 => Just(r#"{"choices":[{"index":0,"delta":{"content":"a" "b"}}]}"#.to_owned()),
    ]
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
