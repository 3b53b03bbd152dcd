//! The proxy's own sealed reasoning: what it puts in a client's opaque reasoning field (an
//! Anthropic thinking block's `signature`, a Responses reasoning item's `encrypted_content`) so
//! that the reasoning comes back with the client's echo of the history, whatever the client
//! shows or keeps of its text. A seal is versioned (`hpr1.`), integrity-checked (HMAC-SHA256 under
//! the process's key) and bounded (`MAX_SEALED_TEXT` bytes of text); `open` answers `None` for
//! anything else — another vendor's signature, a forged or cut blob — and never fails.
//!
//! Owns the seal's format only: no I/O, no randomness (the key is given), no wire format beyond
//! the blob itself. The key comes from `opencode.reasoning_key`, or is random per process
//! (`state`), in which case replicas cannot open each other's seals.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The version prefix of every seal.
const PREFIX: &str = "hpr1.";
/// What the MAC covers besides the text, so a seal is never mistaken for another HMAC of ours.
const CONTEXT: &[u8] = b"harness-proxy reasoning seal v1\0";
/// The most reasoning text one seal holds; longer reasoning is sealed cut at a char boundary.
pub const MAX_SEALED_TEXT: usize = 64 * 1024;
const TAG_LEN: usize = 32;

/// The key seals are made and checked with. Its `Debug` form never shows it.
#[derive(Clone)]
pub struct ReasoningSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for ReasoningSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReasoningSeal(<key>)")
    }
}

impl ReasoningSeal {
    /// A key of raw bytes (a random per-process key).
    pub fn from_bytes(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// A key derived from a configured secret: every process given the same secret opens the
    /// others' seals.
    pub fn from_secret(secret: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"harness-proxy reasoning key\0");
        hasher.update(secret.as_bytes());
        Self {
            key: hasher.finalize().into(),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("any key length");
        mac.update(CONTEXT);
        mac
    }

    /// `text` (cut to `MAX_SEALED_TEXT` bytes) as a seal.
    pub fn seal(&self, text: &str) -> String {
        let text = cut(text, MAX_SEALED_TEXT);
        let mut mac = self.mac();
        mac.update(text.as_bytes());
        let tag = mac.finalize().into_bytes();
        let mut payload = Vec::with_capacity(text.len() + TAG_LEN);
        payload.extend_from_slice(&tag);
        payload.extend_from_slice(text.as_bytes());
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(payload))
    }

    /// The text of one of our seals; `None` for anything else (never an error).
    pub fn open(&self, blob: &str) -> Option<String> {
        let encoded = blob.strip_prefix(PREFIX)?;
        // Base64 of the tag and the longest text, rounded up: nothing longer is decoded.
        if encoded.len() > (TAG_LEN + MAX_SEALED_TEXT).div_ceil(3) * 4 {
            return None;
        }
        let payload = URL_SAFE_NO_PAD.decode(encoded).ok()?;
        if payload.len() < TAG_LEN {
            return None;
        }
        let (tag, text) = payload.split_at(TAG_LEN);
        let mut mac = self.mac();
        mac.update(text);
        mac.verify_slice(tag).ok()?;
        String::from_utf8(text.to_vec()).ok()
    }
}

/// Every reasoning item's text recovered from its seal where the client echoed none (Claude Code
/// with thinking display omitted sends the block back empty). Text the client did echo wins: it
/// is not cut, and it is the client's own history.
pub fn recover(items: &mut [super::Item], seal: &ReasoningSeal) {
    for item in items {
        if let super::Item::Reasoning(reasoning) = item
            && reasoning.text.is_empty()
            && let Some(text) = reasoning.sealed.as_deref().and_then(|s| seal.open(s))
        {
            reasoning.text = text;
        }
    }
}

/// `text` cut to at most `max` bytes, at a char boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal() -> ReasoningSeal {
        ReasoningSeal::from_secret("test secret")
    }

    #[test]
    fn a_seal_opens_to_its_text() {
        let blob = seal().seal("I should run ls — then read.");
        assert!(blob.starts_with("hpr1."));
        assert_eq!(
            seal().open(&blob).as_deref(),
            Some("I should run ls — then read.")
        );
        assert_eq!(seal().open(&seal().seal("")).as_deref(), Some(""));
    }

    #[test]
    fn forged_corrupt_foreign_or_oversized_blobs_open_to_nothing() {
        let blob = seal().seal("secret plan");
        // Another key.
        assert_eq!(ReasoningSeal::from_secret("other").open(&blob), None);
        // One character changed anywhere after the prefix.
        for at in [5, blob.len() / 2, blob.len() - 1] {
            let mut bytes = blob.clone().into_bytes();
            bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(bytes).expect("ascii");
            assert_eq!(seal().open(&changed), None, "changed at {at}");
        }
        // Cut, unversioned, another vendor's, not base64, too short, too long.
        assert_eq!(seal().open(&blob[..blob.len() - 4]), None);
        assert_eq!(seal().open(blob.trim_start_matches("hpr1.")), None);
        assert_eq!(seal().open("harness-proxy"), None);
        assert_eq!(seal().open("EqQBCkgIARABGAIiQL2y"), None);
        assert_eq!(seal().open("hpr1.!!!"), None);
        assert_eq!(seal().open("hpr1.AAAA"), None);
        let huge = format!("hpr1.{}", "A".repeat(200 * 1024));
        assert_eq!(seal().open(&huge), None);
    }

    #[test]
    fn long_reasoning_is_sealed_cut_at_a_char_boundary() {
        let text = "é".repeat(MAX_SEALED_TEXT);
        let opened = seal().open(&seal().seal(&text)).expect("opens");
        assert!(opened.len() <= MAX_SEALED_TEXT && opened.len() >= MAX_SEALED_TEXT - 1);
        assert!(text.starts_with(&opened));
    }

    #[test]
    fn recovery_fills_only_empty_texts_from_valid_seals() {
        use crate::conversation::{Item, Reasoning};
        let item = |text: &str, sealed: Option<String>| {
            Item::Reasoning(Reasoning {
                text: text.into(),
                opaque: None,
                sealed,
            })
        };
        let mut items = vec![
            item("", Some(seal().seal("from the seal"))),
            item("shown", Some(seal().seal("sealed"))),
            item("", Some("sig==".into())),
            item("", None),
        ];
        recover(&mut items, &seal());
        assert_eq!(
            items,
            vec![
                item("from the seal", Some(seal().seal("from the seal"))),
                item("shown", Some(seal().seal("sealed"))),
                item("", Some("sig==".into())),
                item("", None),
            ]
        );
    }

    #[test]
    fn the_key_never_shows() {
        assert_eq!(format!("{:?}", seal()), "ReasoningSeal(<key>)");
    }
}
