//! The upstream's prompt-cache key (`opencode.prompt_cache_key`, docs/wire.md §1 "Body"): which
//! key, if any, a rebuilt request names so an upstream that routes by it (OpenAI; servers that
//! copy its API) keeps one conversation's prefix on one cache.
//!
//! The client's own `prompt_cache_key` (Responses, Chat) goes hashed with the caller's scope
//! (`CALLER_HEADER`), so a caller cannot name another's key (issue 30 item 6: a caller echoing
//! another's derived key shared its cache). Otherwise the key is the route's scope of the request
//! (`SCOPE_HEADER`): a hash of the caller and the conversation id the client sent (`derive`), so
//! the raw id does not leave and two callers never share a key. The route computes both because
//! only it knows the caller and the conversation-id headers; a client that named no conversation
//! has none. Without a caller (`harness-proxy rewrite`, goldens) the client's own key goes as it is.
//!
//! Must not: read a credential, know which headers name a conversation.

use std::borrow::Cow;

use http::{HeaderMap, HeaderName};
use sha2::{Digest, Sha256};

use crate::config::PromptCacheKey;
use crate::conversation::Conversation;

/// The proxy's own header (never forwarded: `x-harness-*`) carrying `derive`'s key to the
/// harness; set only by the route, which first removes any a client sent.
pub static SCOPE_HEADER: HeaderName = HeaderName::from_static("x-harness-prompt-cache-scope");

/// The proxy's own header carrying the caller's scope (`caller`) to the harness, for a key the
/// client named itself; set only by the route, which first removes any a client sent.
pub static CALLER_HEADER: HeaderName = HeaderName::from_static("x-harness-prompt-cache-caller");

/// The key of `owner`'s conversation `id`: `hpck_` and 32 hex digits of a SHA-256 over both.
pub fn derive(owner: &str, id: &str) -> String {
    format!("hpck_{}", digest(b"prompt-cache\0", owner, id))
}

/// The caller's scope for its own keys: `hpcc_` and 32 hex digits of a SHA-256 over its owner
/// (already a hash of its credential, or `anonymous`), so the harness sees no owner either.
pub fn caller(owner: &str) -> String {
    format!("hpcc_{}", digest(b"prompt-cache-caller\0", owner, ""))
}

fn digest(domain: &[u8], owner: &str, id: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [domain, owner.as_bytes(), b"\0", id.as_bytes()] {
        hasher.update(part);
    }
    // The first 16 bytes only, written straight into a buffer: `hex::encode` builds its string
    // a char at a time, and this runs on every rewritten request.
    let mut hex = [0u8; 32];
    match hex::encode_to_slice(&hasher.finalize()[..16], &mut hex) {
        Ok(()) => String::from_utf8_lossy(&hex).into_owned(),
        // Unreachable: 16 bytes always fill 32 digits.
        Err(_) => String::new(),
    }
}

/// The key the upstream body names, `None` for none: the client's own non-blank
/// `prompt_cache_key` hashed with its caller's scope, else the route's scope.
pub fn for_request<'a>(
    mode: PromptCacheKey,
    conversation: &'a Conversation,
    headers: &'a HeaderMap,
) -> Option<Cow<'a, str>> {
    if mode == PromptCacheKey::Off {
        return None;
    }
    let header = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let own = conversation
        .options
        .extra
        .get("prompt_cache_key")
        .and_then(serde_json::Value::as_str)
        .filter(|key| !key.trim().is_empty());
    match (own, header(&CALLER_HEADER)) {
        (Some(own), Some(caller)) => Some(Cow::Owned(derive(caller, own))),
        (Some(own), None) => Some(Cow::Borrowed(own)),
        (None, _) => header(&SCOPE_HEADER).map(Cow::Borrowed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_bound_to_its_caller_and_hides_the_id() {
        let key = derive("owner-a", "ses_1");
        assert_eq!(key, derive("owner-a", "ses_1"));
        assert_ne!(key, derive("owner-b", "ses_1"));
        assert_ne!(key, derive("owner-a", "ses_2"));
        // The separator keeps (`ab`, `c`) and (`a`, `bc`) apart.
        assert_ne!(derive("ab", "c"), derive("a", "bc"));
        assert!(!key.contains("ses_1"), "{key}");
        assert_eq!(key.len(), "hpck_".len() + 32);
    }

    #[test]
    fn keys_are_the_first_half_of_a_sha256_in_lowercase_hex() {
        // sha256("prompt-cache\0owner-a\0ses_1") and sha256("prompt-cache-caller\0owner-a\0"),
        // their first 32 hex digits (Python's hashlib).
        assert_eq!(
            derive("owner-a", "ses_1"),
            "hpck_32b6a16cb002741d5ed2906252963a7b"
        );
        assert_eq!(caller("owner-a"), "hpcc_62943b2136498ced22e5d13c1460595c");
    }

    #[test]
    fn the_client_s_own_key_wins_then_the_scope_and_off_sends_none() {
        let mut headers = HeaderMap::new();
        headers.insert(
            SCOPE_HEADER.clone(),
            http::HeaderValue::from_static("hpck_scope"),
        );
        let mut conversation = Conversation::default();
        let on = PromptCacheKey::Conversation;
        assert_eq!(
            for_request(on, &conversation, &headers).as_deref(),
            Some("hpck_scope")
        );
        conversation
            .options
            .extra
            .insert("prompt_cache_key".into(), "019a-own".into());
        assert_eq!(
            for_request(on, &conversation, &headers).as_deref(),
            Some("019a-own"),
            "no caller: as it is"
        );
        assert_eq!(
            for_request(PromptCacheKey::Off, &conversation, &headers),
            None
        );
        conversation
            .options
            .extra
            .insert("prompt_cache_key".into(), " ".into());
        assert_eq!(
            for_request(on, &conversation, &headers).as_deref(),
            Some("hpck_scope")
        );
        assert_eq!(for_request(on, &conversation, &HeaderMap::new()), None);
    }

    #[test]
    fn the_client_s_own_key_is_scoped_by_its_caller() {
        let mut conversation = Conversation::default();
        conversation
            .options
            .extra
            .insert("prompt_cache_key".into(), "019a-own".into());
        let on = PromptCacheKey::Conversation;
        let as_caller = |owner: &str| {
            let mut headers = HeaderMap::new();
            let scope = http::HeaderValue::from_str(&caller(owner)).expect("header value");
            headers.insert(CALLER_HEADER.clone(), scope);
            for_request(on, &conversation, &headers).map(Cow::into_owned)
        };
        let a = as_caller("owner-a").expect("a key");
        assert_eq!(as_caller("owner-a").as_deref(), Some(a.as_str()), "stable");
        assert_ne!(as_caller("owner-b").as_deref(), Some(a.as_str()));
        assert!(a.starts_with("hpck_") && !a.contains("019a-own"), "{a}");
        assert!(!caller("owner-a").contains("owner-a"));
    }
}
