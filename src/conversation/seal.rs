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
//! `hpr4.` (issue 34): `hpr3.` and the server's redacted thinking (Anthropic `redacted_thinking`
//! blocks' `data`, in order, at most `MAX_SEALED_REDACTED` bytes in all), which the server
//! refuses a history without. Made only when there is some; `hpr1.` to `hpr3.` still open.
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
/// The prefix and context of a seal that carries the server's redacted thinking too.
const PREFIX_REDACTED: &str = "hpr4.";
const CONTEXT_REDACTED: &[u8] = b"harness-proxy reasoning seal v4\0";
/// The most redacted thinking one seal carries: its blocks' data and a length (`LEN_BYTES`)
/// each. More is not carried (the seal is made without it), as a longer text is cut.
pub const MAX_SEALED_REDACTED: usize = 64 * 1024;
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
        push_field(&mut plain, signature.as_bytes());
        plain.extend_from_slice(text.as_bytes());
        self.encrypt(PREFIX_SIGNED, CONTEXT_SIGNED, &plain)
    }

    /// `text` sealed with what the server gave beside it: its `signature` and its `redacted`
    /// thinking (`hpr4.`) when there is some that fits, else as `seal_signed` makes it.
    pub fn seal_with_server(
        &self,
        text: &str,
        signature: Option<&str>,
        redacted: &[String],
    ) -> String {
        let framed: usize = redacted.iter().map(|r| LEN_BYTES + r.len()).sum();
        if redacted.is_empty() || framed > MAX_SEALED_REDACTED {
            return self.seal_signed(text, signature);
        }
        let signature = signature
            .filter(|s| s.len() <= MAX_SEALED_SIGNATURE)
            .unwrap_or("");
        let text = cut(text, MAX_SEALED_TEXT);
        let mut plain = Vec::with_capacity(2 * LEN_BYTES + signature.len() + framed + text.len());
        push_field(&mut plain, signature.as_bytes());
        // At most MAX_SEALED_REDACTED / LEN_BYTES blocks: the count fits in four bytes.
        plain.extend_from_slice(&u32::try_from(redacted.len()).unwrap_or(0).to_be_bytes());
        for data in redacted {
            push_field(&mut plain, data.as_bytes());
        }
        plain.extend_from_slice(text.as_bytes());
        self.encrypt(PREFIX_REDACTED, CONTEXT_REDACTED, &plain)
    }

    /// An `hpr4.` seal's parts; `None` when it does not open or does not parse whole.
    fn open_redacted(&self, encoded: &str) -> Option<Opened> {
        let extra = 2 * LEN_BYTES + MAX_SEALED_SIGNATURE + MAX_SEALED_REDACTED;
        let plain = self.decrypt(encoded, CONTEXT_REDACTED, extra)?;
        let (signature, rest) = take_field(&plain)?;
        let (count, mut rest) = rest.split_at_checked(LEN_BYTES)?;
        let count = u32::from_be_bytes(count.try_into().ok()?);
        let mut redacted = Vec::new();
        for _ in 0..count {
            let (data, after) = take_field(rest)?;
            redacted.push(String::from_utf8(data.to_vec()).ok()?);
            rest = after;
        }
        let signature = String::from_utf8(signature.to_vec()).ok()?;
        Some(Opened {
            text: String::from_utf8(rest.to_vec()).ok()?,
            signature: Some(signature).filter(|s| !s.is_empty()),
            redacted,
        })
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

    /// The text and what the server gave beside it (its signature, `None` when the seal carries
    /// none; its redacted thinking) of one of our seals; `None` for anything that is not our
    /// seal (never an error).
    pub fn open_signed(&self, blob: &str) -> Option<Opened> {
        if let Some(encoded) = blob.strip_prefix(PREFIX_REDACTED) {
            return self.open_redacted(encoded);
        }
        let Some(encoded) = blob.strip_prefix(PREFIX_SIGNED) else {
            return self.open(blob).map(|text| Opened {
                text,
                signature: None,
                redacted: Vec::new(),
            });
        };
        let plain = self.decrypt(encoded, CONTEXT_SIGNED, LEN_BYTES + MAX_SEALED_SIGNATURE)?;
        let (signature, text) = take_field(&plain)?;
        Some(Opened {
            text: String::from_utf8(text.to_vec()).ok()?,
            signature: Some(String::from_utf8(signature.to_vec()).ok()?),
            redacted: Vec::new(),
        })
    }

    /// The text of one of our seals, of any version; `None` for anything else (never an error).
    pub fn open(&self, blob: &str) -> Option<String> {
        if blob.starts_with(PREFIX_SIGNED) || blob.starts_with(PREFIX_REDACTED) {
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
    /// The server's redacted thinking blocks' data, in order (`hpr4.`; empty before).
    pub redacted: Vec<String>,
}

/// `field` after its length (`LEN_BYTES`, big-endian); every length in a seal is bounded well
/// below four bytes' reach.
fn push_field(plain: &mut Vec<u8>, field: &[u8]) {
    plain.extend_from_slice(&u32::try_from(field.len()).unwrap_or(0).to_be_bytes());
    plain.extend_from_slice(field);
}

/// The field `push_field` wrote at the front of `plain`, and what follows it.
fn take_field(plain: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = plain.split_at_checked(LEN_BYTES)?;
    let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
    rest.split_at_checked(len)
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
/// with thinking display omitted sends the block back empty), and the server's signature and
/// redacted thinking the seal carries. Text the client did echo wins: it is not cut, and it is the client's own history.
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
            if !opened.redacted.is_empty() {
                reasoning.redacted = opened.redacted;
            }
        }
    }
}

/// `text` cut to at most `max` bytes, at a char boundary.
fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
