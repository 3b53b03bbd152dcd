//! A whole JSON answer as it is written to a client that did not stream. A small one is one
//! buffer. One that carries long texts (a folded answer can be `limits.max_answer_bytes` of text)
//! is its skeleton with those texts taken out, each escaped piece by piece as the body is sent:
//! the answer's text is held once, in the strings the fold built, never a second time as JSON
//! (issue 30: a 60 MiB answer held twice peaked at 3.5× its size).
//!
//! A text is taken out by leaving a slot in its place, a string no answer holds (a private-use
//! character, a random id, its index); the skeleton is serialized as usual and cut at its slots.
//! A text comes as an `api::text::Text`, the pieces it was folded in: they are written in turn,
//! never joined.
//!
//! Owns: the slots, the cut, the escaping of each piece. Must not: know a protocol's shape.

use std::cell::OnceCell;
use std::collections::VecDeque;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::api::text::Text;

/// Texts at least this long are written piece by piece; shorter ones stay in the skeleton.
pub const LONG_TEXT: usize = 256 * 1024;
/// The text escaped at a time, at most (cut on a character boundary).
const PIECE: usize = 64 * 1024;

/// The body of a whole JSON answer, as the chunks to write (an `Iterator` of them).
#[derive(Debug)]
pub struct JsonAnswer {
    parts: VecDeque<Part>,
}

#[derive(Debug)]
enum Part {
    Raw(Bytes),
    /// A text (or one piece of it) still to write, without its quotes, from byte `at` on.
    Text {
        text: String,
        at: usize,
    },
}

impl JsonAnswer {
    /// An answer already written.
    pub fn whole(bytes: Bytes) -> Self {
        Self {
            parts: VecDeque::from([Part::Raw(bytes)]),
        }
    }

    /// `value` as JSON, some of its texts already placed with `slots` (`Slots::place`, into
    /// `texts`); when its texts weigh `LONG_TEXT` or more (`text_bytes`), its other long strings
    /// are taken out too, and each is written piece by piece.
    pub fn of_placed(
        mut value: Value,
        slots: &Slots,
        mut texts: Vec<Text>,
        text_bytes: usize,
    ) -> Result<Self, serde_json::Error> {
        if text_bytes >= LONG_TEXT {
            take_long_strings(&mut value, slots, &mut texts);
        }
        Self::with_texts(&value, slots, texts, text_bytes)
    }

    /// `skeleton` as JSON, each of `slots`' slots in it replaced by its text from `texts`;
    /// `text_bytes` (the answer's text) sizes the buffer of an answer with no text taken out.
    pub fn with_texts(
        skeleton: &impl Serialize,
        slots: &Slots,
        texts: Vec<Text>,
        text_bytes: usize,
    ) -> Result<Self, serde_json::Error> {
        if texts.is_empty() {
            return written(skeleton, text_bytes).map(Self::whole);
        }
        let json = serde_json::to_vec(skeleton)?;
        let mut texts: Vec<Option<Text>> = texts.into_iter().map(Some).collect();
        let mut parts = VecDeque::new();
        let marker = format!("\"{}", slots.base());
        let finder = memchr::memmem::Finder::new(marker.as_bytes());
        let json = Bytes::from(json);
        let mut from = 0;
        while let Some(found) = finder.find(&json[from..]) {
            let start = from + found;
            let digits = start + marker.len();
            let end = digits
                + json[digits..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .unwrap_or(json.len() - digits);
            let index = std::str::from_utf8(&json[digits..end])
                .ok()
                .and_then(|d| d.parse::<usize>().ok());
            let text = index.and_then(|i| texts.get_mut(i)).and_then(Option::take);
            match text {
                // `"…slotN"`: the quotes stay, the slot's text goes between them.
                Some(text) if json.get(end) == Some(&b'"') => {
                    parts.push_back(Part::Raw(json.slice(from..=start)));
                    parts.extend(text.into_pieces().map(|text| Part::Text { text, at: 0 }));
                    from = end;
                }
                _ => {
                    parts.push_back(Part::Raw(json.slice(from..digits)));
                    from = digits;
                }
            }
        }
        parts.push_back(Part::Raw(json.slice(from..)));
        Ok(Self { parts })
    }

    /// The answer in one buffer, when it was written as one (small answers).
    pub fn into_whole(mut self) -> Result<Bytes, Self> {
        match (self.parts.len(), self.parts.front()) {
            (1, Some(Part::Raw(_))) => match self.parts.pop_front() {
                Some(Part::Raw(bytes)) => Ok(bytes),
                _ => Err(self),
            },
            _ => Err(self),
        }
    }

    /// Every chunk joined (tests, and callers that need the answer whole anyway).
    pub fn into_bytes(self) -> Bytes {
        match self.into_whole() {
            Ok(bytes) => bytes,
            Err(parts) => parts.flat_map(|b| b.to_vec()).collect::<Vec<u8>>().into(),
        }
    }
}

impl Iterator for JsonAnswer {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        loop {
            match self.parts.front_mut()? {
                Part::Raw(_) => match self.parts.pop_front() {
                    Some(Part::Raw(bytes)) if !bytes.is_empty() => return Some(bytes),
                    _ => continue,
                },
                Part::Text { text, at } => {
                    if *at >= text.len() {
                        self.parts.pop_front();
                        continue;
                    }
                    let rest = &text[*at..];
                    let piece = &rest[..rest.floor_char_boundary(PIECE).max(first_char(rest))];
                    *at += piece.len();
                    return Some(escaped(piece));
                }
            }
        }
    }
}

/// The length of `text`'s first character (a piece always makes progress).
fn first_char(text: &str) -> usize {
    text.chars().next().map_or(0, char::len_utf8)
}

/// `piece` as the inside of a JSON string.
fn escaped(piece: &str) -> Bytes {
    let mut out = Vec::with_capacity(piece.len() + piece.len() / 8 + 2);
    // A `&str` always serializes; the quotes serde writes around it are cut off below.
    if serde_json::to_writer(&mut out, piece).is_err() || out.len() < 2 {
        return Bytes::new();
    }
    out.pop();
    Bytes::from(out).slice(1..)
}

/// Where one answer's long texts go while its skeleton is written.
#[derive(Debug)]
pub struct Slots {
    /// Made when the first text is taken out: a short answer draws no random id.
    base: OnceCell<String>,
}

impl Default for Slots {
    fn default() -> Self {
        Self::new()
    }
}

impl Slots {
    pub fn new() -> Self {
        Self {
            base: OnceCell::new(),
        }
    }

    fn base(&self) -> &str {
        self.base
            .get_or_init(|| format!("\u{e000}hp-text-{}-", uuid::Uuid::new_v4().simple()))
    }

    /// `text` as the string its JSON holds: itself when short; when long, its slot, the text
    /// going to `texts`.
    pub fn place(&self, text: Text, texts: &mut Vec<Text>) -> String {
        if text.len() < LONG_TEXT {
            return text.into_string();
        }
        let slot = format!("{}{}", self.base(), texts.len());
        texts.push(text);
        slot
    }

    /// Takes `text` out into `texts` when it is long, leaving its slot.
    pub fn take(&self, text: &mut Text, texts: &mut Vec<Text>) {
        if text.len() >= LONG_TEXT {
            let long = std::mem::take(text);
            *text = Text::from(self.place(long, texts));
        }
    }

    /// `take`, for a text that is a `String`.
    pub fn take_string(&self, text: &mut String, texts: &mut Vec<Text>) {
        if text.len() >= LONG_TEXT {
            let long = Text::from(std::mem::take(text));
            *text = self.place(long, texts);
        }
    }
}

/// Every long string of `value` (object values and array items) taken out into `texts`.
pub fn take_long_strings(value: &mut Value, slots: &Slots, texts: &mut Vec<Text>) {
    match value {
        Value::String(text) => slots.take_string(text, texts),
        Value::Array(items) => {
            for item in items {
                take_long_strings(item, slots, texts);
            }
        }
        Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                take_long_strings(item, slots, texts);
            }
        }
        _ => {}
    }
}

/// The bytes of every string in `value` (a whole answer's text, for `JsonAnswer::of_placed`).
pub fn string_bytes(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(string_bytes).sum(),
        Value::Object(map) => map.values().map(string_bytes).sum(),
        _ => 0,
    }
}

/// One JSON answer written into a buffer sized for it up front: `text_bytes` (the answer's
/// text, reasoning and arguments) plus room for escapes and the envelope.
pub fn written(value: &impl Serialize, text_bytes: usize) -> Result<Bytes, serde_json::Error> {
    let mut out = Vec::with_capacity(text_bytes + text_bytes / 8 + 4096);
    serde_json::to_writer(&mut out, value)?;
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// `value` as JSON with none of its texts placed beforehand: its long strings are taken out.
    fn of_value(value: Value, text_bytes: usize) -> JsonAnswer {
        JsonAnswer::of_placed(value, &Slots::new(), Vec::new(), text_bytes).expect("writes")
    }

    fn long(seed: &str) -> String {
        seed.repeat(LONG_TEXT / seed.len() + 3)
    }

    #[test]
    fn a_small_answer_is_one_buffer() {
        let value = json!({"a": "short", "b": [1, 2]});
        let answer = of_value(value.clone(), 5);
        let bytes = answer.into_whole().expect("one buffer");
        assert_eq!(bytes, serde_json::to_vec(&value).expect("writes"));
    }

    #[test]
    fn long_texts_are_written_in_pieces_and_the_whole_is_the_same_json() {
        let text = long("héllo \"wörld\"\n\t\u{1}✓ ");
        let other = long("second ");
        let value = json!({"id": "x", "content": [{"text": text}, {"thinking": other}], "n": 3});
        let bytes = text.len() + other.len();
        let answer = of_value(value.clone(), bytes);
        let chunks: Vec<Bytes> = answer.collect();
        assert!(chunks.len() > 4, "written in pieces: {}", chunks.len());
        assert!(chunks.iter().all(|c| c.len() <= PIECE + PIECE / 2 + 64));
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        let back: Value = serde_json::from_slice(&joined).expect("valid JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn a_text_held_in_pieces_is_written_piece_by_piece_never_joined() {
        let mut text = Text::new();
        let mut whole = String::new();
        let delta = "ünïcode \"and\" escapes\n ".repeat(500);
        while whole.len() < 3 * LONG_TEXT * 8 {
            text.push_str(&delta);
            whole.push_str(&delta);
        }
        let pieces = text.pieces().count();
        assert!(pieces > 2, "{pieces} pieces");
        let (slots, mut texts) = (Slots::new(), Vec::new());
        let short = slots.place(Text::from("short"), &mut texts);
        assert_eq!(short, "short", "a short text stays in the JSON");
        let value = json!({"text": slots.place(text, &mut texts), "short": short, "n": 1});
        let answer = JsonAnswer::of_placed(value, &slots, texts, whole.len()).expect("writes");
        let chunks: Vec<Bytes> = answer.collect();
        assert!(chunks.iter().all(|c| c.len() <= PIECE + PIECE / 2 + 64));
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        let back: Value = serde_json::from_slice(&joined).expect("valid JSON");
        assert_eq!(back, json!({"text": whole, "short": "short", "n": 1}));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn any_text_round_trips(text in "\\PC{0,40}", extra in "[a-z\"\\\\\u{0}-\u{1f}]{0,40}") {
            let seed = format!("{text}{extra}");
            let text = seed.repeat(LONG_TEXT / (seed.len() + 1) + 1);
            let value = json!({"t": text, "s": "\u{e000}hp-text-not-a-slot-0"});
            let answer = of_value(value.clone(), LONG_TEXT);
            let back: Value = serde_json::from_slice(&answer.into_bytes()).expect("valid JSON");
            prop_assert_eq!(back, value);
        }
    }
}
