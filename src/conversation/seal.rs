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
//! `hpr3.` (issue 34): the same AEAD over the model server's own signature of the reasoning (an
//! Anthropic thinking block's `signature`, at most `MAX_SEALED_SIGNATURE` bytes) and the text, so
//! that on a Messages upstream the server gets its own signature back with the history, not ours
//! (a server checks it). A seal without a signature is still made `hpr2.`, byte for byte as
//! before.
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
/// The prefix and context of a seal that carries the server's signature too.
const PREFIX_SIGNED: &str = "hpr3.";
const CONTEXT_SIGNED: &[u8] = b"harness-proxy reasoning seal v3\0";
/// The longest server signature a seal carries (Anthropic's are a few hundred bytes to a few
/// KiB); a longer one is not carried, and the seal is made without it.
pub const MAX_SEALED_SIGNATURE: usize = 16 * 1024;
/// The signature's length, before it in a signed seal's plaintext.
const LEN_BYTES: usize = 4;
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
        self.encrypt(PREFIX, CONTEXT, text.as_bytes())
    }

    /// `plain` encrypted under `context`, its nonce the HMAC of `plain` (the same plaintext seals
    /// alike), as `prefix` then base64url of nonce and ciphertext.
    fn encrypt(&self, prefix: &str, context: &[u8], plain: &[u8]) -> String {
        let mut mac = self.mac(context);
        mac.update(plain);
        let digest = mac.finalize().into_bytes();
        let nonce = XNonce::from_slice(&digest[..NONCE_LEN]);
        let payload = Payload {
            msg: plain,
            aad: context,
        };
        // Encrypting a bounded message in memory cannot fail.
        let sealed = self.cipher.encrypt(nonce, payload).unwrap_or_default();
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(nonce);
        blob.extend_from_slice(&sealed);
        format!("{prefix}{}", URL_SAFE_NO_PAD.encode(blob))
    }

    /// `text` (cut to `MAX_SEALED_TEXT` bytes) sealed with the server's `signature` of it, when
    /// there is one that fits (`hpr3.`); else as `seal` makes it.
    pub fn seal_signed(&self, text: &str, signature: Option<&str>) -> String {
        let Some(signature) =
            signature.filter(|s| !s.is_empty() && s.len() <= MAX_SEALED_SIGNATURE)
        else {
            return self.seal(text);
        };
        let text = cut(text, MAX_SEALED_TEXT);
        let mut plain = Vec::with_capacity(LEN_BYTES + signature.len() + text.len());
        // At most MAX_SEALED_SIGNATURE, which fits in four bytes.
        plain.extend_from_slice(&u32::try_from(signature.len()).unwrap_or(0).to_be_bytes());
        plain.extend_from_slice(signature.as_bytes());
        plain.extend_from_slice(text.as_bytes());
        self.encrypt(PREFIX_SIGNED, CONTEXT_SIGNED, &plain)
    }

    /// `encrypt`'s blob (after its prefix) decrypted under `context`, when it decodes within the
    /// longest text plus `extra` bytes and verifies; `None` otherwise.
    fn decrypt(&self, encoded: &str, context: &[u8], extra: usize) -> Option<Vec<u8>> {
        let overhead = NONCE_LEN + AEAD_TAG_LEN;
        let payload = decode_bounded(encoded, overhead, extra)?;
        let (nonce, sealed) = payload.split_at(NONCE_LEN);
        let payload = Payload {
            msg: sealed,
            aad: context,
        };
        self.cipher.decrypt(XNonce::from_slice(nonce), payload).ok()
    }

    /// The text and the server's signature of one of our seals (`None` for the signature when it
    /// carries none); `None` for anything that is not our seal (never an error).
    pub fn open_signed(&self, blob: &str) -> Option<Opened> {
        let Some(encoded) = blob.strip_prefix(PREFIX_SIGNED) else {
            return self.open(blob).map(|text| Opened {
                text,
                signature: None,
            });
        };
        let plain = self.decrypt(encoded, CONTEXT_SIGNED, LEN_BYTES + MAX_SEALED_SIGNATURE)?;
        let (len, rest) = plain.split_at_checked(LEN_BYTES)?;
        let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
        let (signature, text) = rest.split_at_checked(len)?;
        Some(Opened {
            text: String::from_utf8(text.to_vec()).ok()?,
            signature: Some(String::from_utf8(signature.to_vec()).ok()?),
        })
    }

    /// The text of one of our seals, of any version; `None` for anything else (never an error).
    pub fn open(&self, blob: &str) -> Option<String> {
        if blob.starts_with(PREFIX_SIGNED) {
            return self.open_signed(blob).map(|opened| opened.text);
        }
        if let Some(encoded) = blob.strip_prefix(PREFIX) {
            return String::from_utf8(self.decrypt(encoded, CONTEXT, 0)?).ok();
        }
        let payload = decode_bounded(blob.strip_prefix(PREFIX_V1)?, TAG_LEN, 0)?;
        let (tag, text) = payload.split_at(TAG_LEN);
        let mut mac = self.mac(CONTEXT_V1);
        mac.update(text);
        mac.verify_slice(tag).ok()?;
        String::from_utf8(text.to_vec()).ok()
    }
}

/// What one of our seals holds, opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub text: String,
    /// The model server's own signature of the text, when the seal carries one.
    pub signature: Option<String>,
}

/// A seal's base64 decoded, when it is no longer than `overhead`, `extra` and the longest text
/// could make it (nothing longer is decoded) and at least `overhead` long.
fn decode_bounded(encoded: &str, overhead: usize, extra: usize) -> Option<Vec<u8>> {
    if encoded.len() > (overhead + extra + MAX_SEALED_TEXT).div_ceil(3) * 4 {
        return None;
    }
    let payload = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    (payload.len() >= overhead).then_some(payload)
}

/// Every reasoning item's text recovered from its seal where the client echoed none (Claude Code
/// with thinking display omitted sends the block back empty), and the server's signature the
/// seal carries. Text the client did echo wins: it is not cut, and it is the client's own history.
pub fn recover(items: &mut [super::Item], seal: &ReasoningSeal) {
    for item in items {
        if let super::Item::Reasoning(reasoning) = item
            && let Some(opened) = reasoning
                .sealed
                .as_deref()
                .and_then(|s| seal.open_signed(s))
        {
            if reasoning.text.is_empty() {
                reasoning.text = opened.text;
            }
            reasoning.signature = opened.signature;
        }
    }
}

/// `text` cut to at most `max` bytes, at a char boundary.
fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
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
                signature: None,
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
    fn a_signed_seal_carries_the_server_s_signature_and_opens_only_whole() {
        let blob = seal().seal_signed("thought", Some("EqQBsig=="));
        assert!(blob.starts_with("hpr3."), "{blob}");
        let opened = seal().open_signed(&blob).expect("opens");
        assert_eq!(opened.text, "thought");
        assert_eq!(opened.signature.as_deref(), Some("EqQBsig=="));
        assert_eq!(seal().open(&blob).as_deref(), Some("thought"));
        assert_eq!(
            seal().seal_signed("thought", Some("EqQBsig==")),
            blob,
            "stable"
        );
        // Without a signature (or one too long to carry) the seal is the one `seal` makes.
        assert_eq!(seal().seal_signed("thought", None), seal().seal("thought"));
        let long = "s".repeat(MAX_SEALED_SIGNATURE + 1);
        assert_eq!(seal().seal_signed("t", Some(&long)), seal().seal("t"));
        let opened = seal().open_signed(&seal().seal("t")).expect("opens");
        assert_eq!(opened.signature, None);
        // Another key, a changed byte, a cut or an unversioned blob: nothing.
        assert_eq!(ReasoningSeal::from_secret("other").open_signed(&blob), None);
        let mut bytes = blob.clone().into_bytes();
        let at = blob.len() / 2;
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            seal().open_signed(&String::from_utf8(bytes).expect("ascii")),
            None
        );
        assert_eq!(seal().open_signed(&blob[..blob.len() - 4]), None);
        assert_eq!(
            seal().open_signed(&blob.replacen("hpr3.", "hpr2.", 1)),
            None
        );
        let huge = format!("hpr3.{}", "A".repeat(200 * 1024));
        assert_eq!(seal().open_signed(&huge), None);
        // Recovery puts the signature beside the text.
        use crate::conversation::{Item, Reasoning};
        let mut items = vec![Item::Reasoning(Reasoning {
            sealed: Some(blob),
            ..Reasoning::default()
        })];
        recover(&mut items, &seal());
        let Item::Reasoning(reasoning) = &items[0] else {
            panic!("reasoning");
        };
        assert_eq!(reasoning.text, "thought");
        assert_eq!(reasoning.signature.as_deref(), Some("EqQBsig=="));
    }

    #[test]
    fn the_key_never_shows() {
        assert_eq!(format!("{:?}", seal()), "ReasoningSeal(<key>)");
    }
}
