//! A text that grows in pieces: a whole answer's text, reasoning or call arguments as they are
//! folded. A `String` grows by doubling, and each move leaves its old buffer to the allocator,
//! which returns it to the system only after its decay time: a 60 MiB answer folded faster than
//! that peaked at twice its size (issue 30's held-once bound, failed on a fast CI machine). Past
//! `PIECE` bytes a `Text` starts a new piece instead, so nothing is ever copied to grow and at most
//! one piece is slack.
//!
//! Serialized as one JSON string. A text in several pieces is joined for it: a whole answer's
//! long texts never come here, `protocols::json_body` writes them piece by piece. (serde's
//! `collect_str` would escape the pieces in place, but its one more instantiation of serde_json's
//! string writer changed what the compiler inlined on every streamed event: +1 % of a Responses
//! turn's instructions, measured with callgrind.)

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest piece grown in place; later pieces are allocated at this size at once.
const PIECE: usize = 1 << 20;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    pieces: Vec<String>,
    len: usize,
}

impl Text {
    pub fn new() -> Self {
        Self::default()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.len += text.len();
        match self.pieces.last_mut() {
            // The first piece grows as a `String` does, up to `PIECE`; later ones were allocated
            // whole and are filled without moving.
            Some(last) if last.len() + text.len() <= PIECE.max(last.capacity()) => {
                last.push_str(text);
            }
            _ => {
                let mut piece = if self.pieces.is_empty() {
                    String::new()
                } else {
                    String::with_capacity(PIECE.max(text.len()))
                };
                piece.push_str(text);
                self.pieces.push(piece);
            }
        }
    }

    /// Its pieces in order; joined they are the text.
    pub fn pieces(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().map(String::as_str)
    }

    /// The text as one `str`: borrowed when it is one piece (any text up to `PIECE`).
    pub fn as_str(&self) -> Cow<'_, str> {
        match self.pieces.as_slice() {
            [] => Cow::Borrowed(""),
            [one] => Cow::Borrowed(one),
            pieces => Cow::Owned(pieces.concat()),
        }
    }

    /// Its pieces, moved out in order.
    pub fn into_pieces(self) -> impl Iterator<Item = String> {
        self.pieces.into_iter()
    }

    /// The text as one `String`: moved when it is one piece, joined otherwise.
    pub fn into_string(mut self) -> String {
        match self.pieces.len() {
            0 => String::new(),
            1 => self.pieces.pop().unwrap_or_default(),
            _ => self.pieces.concat(),
        }
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        let len = text.len();
        Self {
            pieces: if text.is_empty() {
                Vec::new()
            } else {
                vec![text]
            },
            len,
        }
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pieces().try_for_each(|piece| f.write_str(piece))
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_grows_in_pieces_without_moving_them() {
        let mut text = Text::new();
        let delta = "é".repeat(1000);
        let mut whole = String::new();
        // Where each piece's bytes live, once it is no longer the last one.
        let mut settled: Vec<*const u8> = Vec::new();
        for _ in 0..3000 {
            text.push_str(&delta);
            whole.push_str(&delta);
            for (i, piece) in text.pieces.iter().enumerate().take(text.pieces.len() - 1) {
                match settled.get(i) {
                    Some(at) => assert_eq!(*at, piece.as_ptr(), "piece {i} moved"),
                    None => settled.push(piece.as_ptr()),
                }
            }
        }
        assert_eq!(text.len(), whole.len());
        assert_eq!(text.to_string(), whole);
        assert!(text.pieces.len() >= 5, "{} pieces", text.pieces.len());
        for piece in &text.pieces[1..] {
            assert_eq!(piece.capacity(), PIECE, "a later piece is allocated once");
        }
        assert_eq!(text.as_str(), whole);
        assert_eq!(text.into_string(), whole);
    }

    #[test]
    fn it_serializes_as_the_one_string_it_holds() {
        let mut text = Text::new();
        let delta = "a \"quoted\" line\n\u{1}é€😀".repeat(4000);
        let mut whole = String::new();
        for _ in 0..40 {
            text.push_str(&delta);
            whole.push_str(&delta);
        }
        assert!(text.pieces.len() > 1);
        let json = serde_json::to_string(&text).expect("serializes");
        assert_eq!(json, serde_json::to_string(&whole).expect("serializes"));
        let back: Text = serde_json::from_str(&json).expect("parses");
        assert_eq!(back.into_string(), whole);
        assert_eq!(serde_json::to_string(&Text::new()).expect("empty"), "\"\"");
        assert_eq!(
            serde_json::to_string(&Text::from("x")).expect("one"),
            "\"x\""
        );
    }

    #[test]
    fn a_delta_longer_than_a_piece_is_one_piece_of_its_own() {
        let mut text = Text::from("start");
        let long = "y".repeat(PIECE + 10);
        text.push_str(&long);
        text.push_str("end");
        assert_eq!(text.len(), 5 + long.len() + 3);
        assert_eq!(text.into_string(), format!("start{long}end"));
    }
}
