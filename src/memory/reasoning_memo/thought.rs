//! What the memo keeps of one answer's reasoning: its text, and what a Messages server needs
//! back with it — its signature of the thinking, and its redacted thinking blocks' data. A
//! thinking block sent back without the signature the server gave it is refused, and so is a
//! history that lost a redacted block; a Chat or Gemini client echoes neither, so the memo is
//! where they come from on the next turn.
//!
//! Owns: the entry's parts, what they count against a byte bound, and how the redacted list is
//! written in a store (one JSON array of strings: SQLite's `redacted` column, Redis's `x` field).
//! Must not: hold anything a client could read (the memo hands it back only to its caller's
//! next turn).

use crate::conversation::Reasoning;

/// One answer's reasoning as the memo keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thought {
    pub text: String,
    /// The server's signature of `text` (an Anthropic thinking block's `signature`).
    pub signature: Option<String>,
    /// The server's redacted thinking (`redacted_thinking` blocks' `data`), in order.
    pub redacted: Vec<String>,
}

impl Thought {
    /// What the entry counts against a byte bound: every byte it holds, not the text alone.
    pub fn bytes(&self) -> usize {
        self.text.len()
            + self.signature.as_ref().map_or(0, String::len)
            + self.redacted.iter().map(String::len).sum::<usize>()
    }

    /// Nothing to give back: no text, no signature, no redacted thinking.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.signature.is_none() && self.redacted.is_empty()
    }

    /// The reasoning item a turn gets back, where the client would have put its own.
    pub fn to_reasoning(&self) -> Reasoning {
        Reasoning {
            text: self.text.clone(),
            signature: self.signature.clone(),
            redacted: self.redacted.clone(),
            ..Reasoning::default()
        }
    }

    /// The redacted list as a store column or field holds it; `None` when there is none (an
    /// entry without one stores nothing more than before).
    pub fn stored_redacted(&self) -> Option<String> {
        (!self.redacted.is_empty())
            .then(|| serde_json::to_string(&self.redacted).unwrap_or_default())
    }

    /// An entry as a store gives it back; an unreadable redacted list reads as none (a turn
    /// without it is what a store without the column gave).
    pub fn from_stored(text: String, signature: Option<String>, redacted: Option<&str>) -> Self {
        Self {
            text,
            signature: signature.filter(|s| !s.is_empty()),
            redacted: redacted
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or_default(),
        }
    }
}

impl From<&str> for Thought {
    fn from(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ..Self::default()
        }
    }
}

impl From<&String> for Thought {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

impl From<String> for Thought {
    fn from(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_counts_and_the_redacted_list_reads_back_as_stored() {
        let thought = Thought {
            text: "abc".into(),
            signature: Some("sig".into()),
            redacted: vec!["x1".into(), "y22".into()],
        };
        assert_eq!(thought.bytes(), 3 + 3 + 5);
        let stored = thought.stored_redacted();
        let back = Thought::from_stored("abc".into(), Some("sig".into()), stored.as_deref());
        assert_eq!(back, thought);
        assert_eq!(Thought::from("abc").stored_redacted(), None);
        assert_eq!(
            Thought::from_stored("t".into(), Some(String::new()), Some("not json")),
            Thought::from("t")
        );
        assert!(Thought::default().is_empty());
        assert!(
            !Thought {
                signature: Some("s".into()),
                ..Thought::default()
            }
            .is_empty()
        );
    }
}
