//! The upstream's prompt-cache key (`opencode.prompt_cache_key`, docs/wire.md §1 "Body"): which
//! key, if any, a rebuilt request names so an upstream that routes by it (OpenAI; servers that
//! copy its API) keeps one conversation's prefix on one cache.
//!
//! The client's own `prompt_cache_key` (Responses, Chat) goes as it is. Otherwise the key is the
//! route's scope of the request (`SCOPE_HEADER`): a hash of the caller and the conversation id
//! the client sent (`derive`), so the raw id does not leave and two callers never share a key.
//! The route computes it because only it knows the caller and the conversation-id headers; a
//! client that named no conversation has none.
//!
//! Must not: read a credential, know which headers name a conversation.

use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::config::PromptCacheKey;
use crate::conversation::Conversation;

/// The proxy's own header (never forwarded: `x-harness-*`) carrying `derive`'s key to the
/// harness; set only by the route, which first removes any a client sent.
pub const SCOPE_HEADER: &str = "x-harness-prompt-cache-scope";

/// The key of `owner`'s conversation `id`: `hpck_` and 32 hex digits of a SHA-256 over both.
pub fn derive(owner: &str, id: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [
        b"prompt-cache\0".as_slice(),
        owner.as_bytes(),
        b"\0",
        id.as_bytes(),
    ] {
        hasher.update(part);
    }
    let mut hex = hex::encode(hasher.finalize());
    hex.truncate(32);
    format!("hpck_{hex}")
}

/// The key the upstream body names, `None` for none: the client's own non-blank
/// `prompt_cache_key`, else the route's scope.
pub fn for_request<'a>(
    mode: PromptCacheKey,
    conversation: &'a Conversation,
    headers: &'a HeaderMap,
) -> Option<&'a str> {
    if mode == PromptCacheKey::Off {
        return None;
    }
    let own = conversation
        .options
        .extra
        .get("prompt_cache_key")
        .and_then(serde_json::Value::as_str);
    let scope = || headers.get(SCOPE_HEADER).and_then(|v| v.to_str().ok());
    own.filter(|key| !key.trim().is_empty()).or_else(scope)
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
    fn the_client_s_own_key_wins_then_the_scope_and_off_sends_none() {
        let mut headers = HeaderMap::new();
        headers.insert(SCOPE_HEADER, http::HeaderValue::from_static("hpck_scope"));
        let mut conversation = Conversation::default();
        let on = PromptCacheKey::Conversation;
        assert_eq!(for_request(on, &conversation, &headers), Some("hpck_scope"));
        conversation
            .options
            .extra
            .insert("prompt_cache_key".into(), "019a-own".into());
        assert_eq!(for_request(on, &conversation, &headers), Some("019a-own"));
        assert_eq!(
            for_request(PromptCacheKey::Off, &conversation, &headers),
            None
        );
        conversation
            .options
            .extra
            .insert("prompt_cache_key".into(), " ".into());
        assert_eq!(for_request(on, &conversation, &headers), Some("hpck_scope"));
        assert_eq!(for_request(on, &conversation, &HeaderMap::new()), None);
    }
}
