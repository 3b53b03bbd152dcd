//! The proxy's own sealed reasoning: what it puts in a client's opaque reasoning field (an
//! Anthropic thinking block's `signature`, a Responses reasoning item's `encrypted_content`) so
//! that the reasoning comes back with the client's echo of the history, whatever the client
//! shows or keeps of its text. A seal is versioned, encrypted and authenticated, and bounded
//! (`MAX_SEALED_TEXT` bytes of text); `open` answers `None` for anything else — another vendor's
//! signature, a forged or cut blob — and never fails.
//!
//! `hpr2.` (issue 30 item 6): XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`, an audited,
//! widely used AEAD with a 192-bit nonce, so a nonce derived from the text is safe) under a key
//! derived from the process's, the nonce an HMAC-SHA256 of the text under the process's key (a
//! synthetic IV: the same reasoning seals to the same bytes, so a client's echoed history stays
//! byte-identical from turn to turn, and sealing needs no randomness). The seal was signed but not
//! encrypted before: `hpr1.` (HMAC-SHA256 tag, then the text in clear) still opens, for one
//! version, so histories sealed before an upgrade keep their reasoning; nothing seals `hpr1.`.
//!
//! Owns the seal's format only: no I/O, no randomness (the key is given), no wire format beyond
//! the blob itself. The key comes from `opencode.reasoning_key`, or is random per process
//! (`state`), in which case replicas cannot open each other's seals.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The version prefix of every seal made now.
const PREFIX: &str = "hpr2.";
/// The previous version's prefix: opened, never made.
const PREFIX_V1: &str = "hpr1.";
/// What the MAC and the AEAD cover besides the text, so a seal is never mistaken for another
/// HMAC or ciphertext of ours.
const CONTEXT: &[u8] = b"harness-proxy reasoning seal v2\0";
const CONTEXT_V1: &[u8] = b"harness-proxy reasoning seal v1\0";
/// The most reasoning text one seal holds; longer reasoning is sealed cut at a char boundary.
pub const MAX_SEALED_TEXT: usize = 64 * 1024;
const TAG_LEN: usize = 32;
/// XChaCha20-Poly1305's nonce and tag.
const NONCE_LEN: usize = 24;
const AEAD_TAG_LEN: usize = 16;

/// The key seals are made and checked with. Its `Debug` form never shows it.
#[derive(Clone)]
pub struct ReasoningSeal {
    /// The process's key: the synthetic nonce's HMAC key, and `hpr1.`'s.
    key: [u8; 32],
    /// The AEAD's key, derived from `key` (one key, one purpose).
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for ReasoningSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReasoningSeal(<key>)")
    }
}

impl ReasoningSeal {
    /// A key of raw bytes (a random per-process key).
    pub fn from_bytes(key: [u8; 32]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"harness-proxy reasoning encryption key\0");
        hasher.update(key);
        let cipher_key: [u8; 32] = hasher.finalize().into();
        Self {
            key,
            cipher: XChaCha20Poly1305::new(&cipher_key.into()),
        }
    }

    /// A key derived from a configured secret: every process given the same secret opens the
    /// others' seals.
    pub fn from_secret(secret: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"harness-proxy reasoning key\0");
        hasher.update(secret.as_bytes());
        Self::from_bytes(hasher.finalize().into())
    }

    fn mac(&self, context: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("any key length");
        mac.update(context);
        mac
    }

    /// `text` (cut to `MAX_SEALED_TEXT` bytes) as a seal.
    pub fn seal(&self, text: &str) -> String {
        let text = cut(text, MAX_SEALED_TEXT);
        let mut mac = self.mac(CONTEXT);
        mac.update(text.as_bytes());
        let digest = mac.finalize().into_bytes();
        let nonce = XNonce::from_slice(&digest[..NONCE_LEN]);
        let payload = Payload {
            msg: text.as_bytes(),
            aad: CONTEXT,
        };
        // Encrypting a bounded message in memory cannot fail.
        let sealed = self.cipher.encrypt(nonce, payload).unwrap_or_default();
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(nonce);
        blob.extend_from_slice(&sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(blob))
    }

    /// The text of one of our seals, this version's or the previous one's; `None` for anything
    /// else (never an error).
    pub fn open(&self, blob: &str) -> Option<String> {
        if let Some(encoded) = blob.strip_prefix(PREFIX) {
            let payload = decode_bounded(encoded, NONCE_LEN + AEAD_TAG_LEN)?;
            let (nonce, sealed) = payload.split_at(NONCE_LEN);
            let text = self
                .cipher
                .decrypt(
                    XNonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: CONTEXT,
                    },
                )
                .ok()?;
            return String::from_utf8(text).ok();
        }
        let payload = decode_bounded(blob.strip_prefix(PREFIX_V1)?, TAG_LEN)?;
        let (tag, text) = payload.split_at(TAG_LEN);
        let mut mac = self.mac(CONTEXT_V1);
        mac.update(text);
        mac.verify_slice(tag).ok()?;
        String::from_utf8(text.to_vec()).ok()
    }
}

/// A seal's base64 decoded, when it is no longer than `overhead` and the longest text could
/// make it (nothing longer is decoded) and at least `overhead` long.
fn decode_bounded(encoded: &str, overhead: usize) -> Option<Vec<u8>> {
    if encoded.len() > (overhead + MAX_SEALED_TEXT).div_ceil(3) * 4 {
        return None;
    }
    let payload = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    (payload.len() >= overhead).then_some(payload)
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
        assert!(blob.starts_with("hpr2."));
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
        assert_eq!(seal().open(blob.trim_start_matches("hpr2.")), None);
        assert_eq!(seal().open(&blob.replacen("hpr2.", "hpr1.", 1)), None);
        assert_eq!(seal().open("harness-proxy"), None);
        assert_eq!(seal().open("EqQBCkgIARABGAIiQL2y"), None);
        assert_eq!(seal().open("hpr1.!!!"), None);
        assert_eq!(seal().open("hpr1.AAAA"), None);
        assert_eq!(seal().open("hpr2.AAAA"), None);
        for prefix in ["hpr1.", "hpr2."] {
            let huge = format!("{prefix}{}", "A".repeat(200 * 1024));
            assert_eq!(seal().open(&huge), None);
        }
    }

    /// A seal as the previous version made it: the tag, then the text in clear.
    fn seal_v1(seal: &ReasoningSeal, text: &str) -> String {
        let mut mac = seal.mac(CONTEXT_V1);
        mac.update(text.as_bytes());
        let mut payload = mac.finalize().into_bytes().to_vec();
        payload.extend_from_slice(text.as_bytes());
        format!("hpr1.{}", URL_SAFE_NO_PAD.encode(payload))
    }

    #[test]
    fn the_text_cannot_be_read_out_of_a_seal_and_a_v1_seal_still_opens() {
        let text = "I should run ls — then read the config.";
        let blob = seal().seal(text);
        let payload = URL_SAFE_NO_PAD
            .decode(blob.trim_start_matches("hpr2."))
            .expect("base64url");
        assert!(
            !payload
                .windows(8)
                .any(|w| text.as_bytes().windows(8).any(|t| t == w)),
            "no 8 bytes of the text in the clear"
        );
        // The same text, the same seal (the client's echoed history stays byte-identical); another
        // text, another nonce.
        assert_eq!(seal().seal(text), blob);
        assert_ne!(seal().seal("other")[5..37], blob[5..37]);
        // What the previous version sealed opens, for this version; forged, it does not.
        let old = seal_v1(&seal(), text);
        assert_eq!(seal().open(&old).as_deref(), Some(text));
        assert_eq!(ReasoningSeal::from_secret("other").open(&old), None);
        assert_eq!(seal().open(&old.replacen("hpr1.", "hpr2.", 1)), None);
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
