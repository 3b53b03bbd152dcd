//! The request's prompt-cache scope, stamped for the harness (`harness::cache_key`): the caller's
//! conversation, as the client named it, hashed with the caller, and the caller's own scope for
//! a key the client names in its body. The route stamps it because only
//! it knows both (the caller's hash, the conversation-id headers); the harness stays blind to
//! credentials and to which headers name a conversation.

use std::sync::{LazyLock, Mutex, PoisonError};

use hashlink::LruCache;
use http::HeaderValue;

use crate::harness::cache_key::{CALLER_HEADER, SCOPE_HEADER, caller, derive};
use crate::memory::identity::client_conversation_id;
use crate::routes::front::Call;

/// `call` as the harness sees it: with `owner`'s scope for a key the client names itself, with
/// the scope of `owner`'s conversation when the client named one in its headers, and never with
/// a scope the client sent itself.
pub fn stamped(call: &Call, owner: &str) -> Call {
    // An unsafe id is refused later, when the turn is identified; here it names no scope.
    let id = client_conversation_id(&call.headers, None).ok().flatten();
    let scopes = Scopes::of(owner, id.as_deref());
    let mut call = call.clone();
    call.headers.remove(&SCOPE_HEADER);
    call.headers.remove(&CALLER_HEADER);
    if let Some(value) = scopes.conversation {
        call.headers.insert(SCOPE_HEADER.clone(), value);
    }
    if let Some(value) = scopes.caller {
        call.headers.insert(CALLER_HEADER.clone(), value);
    }
    call
}

/// How many callers' conversations keep their scopes: every turn of a conversation has the same
/// two, each a SHA-256 digest (the two and their hex were 11k of a streamed opencode request's
/// 426k instructions, BENCHMARKS.md "Smaller costs per request"). A few hundred bytes each.
const RECENT_SCOPES: usize = 256;

/// The recent conversations' scopes, by `Scopes::key`. Only digests are kept: the owner is
/// already a hash of the credential.
static RECENT: LazyLock<Mutex<LruCache<String, Scopes>>> =
    LazyLock::new(|| Mutex::new(LruCache::new(RECENT_SCOPES)));

/// The two header values `stamped` adds.
#[derive(Clone)]
struct Scopes {
    conversation: Option<HeaderValue>,
    caller: Option<HeaderValue>,
}

impl Scopes {
    fn of(owner: &str, id: Option<&str>) -> Self {
        let key = Self::key(owner, id);
        // A panic elsewhere while holding the lock leaves a cache still whole: keep using it.
        let recent = || RECENT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(scopes) = recent().get(&key) {
            return scopes.clone();
        }
        let scopes = Self {
            conversation: id.and_then(|id| HeaderValue::from_str(&derive(owner, id)).ok()),
            caller: HeaderValue::from_str(&caller(owner)).ok(),
        };
        recent().insert(key, scopes.clone());
        scopes
    }

    /// One text per (owner, id), read back unambiguously: the owner's length first, then the
    /// owner, then `:` and the id when there is one.
    fn key(owner: &str, id: Option<&str>) -> String {
        match id {
            Some(id) => format!("{}:{owner}:{id}", owner.len()),
            None => format!("{}:{owner}", owner.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_scopes_are_the_digests() {
        for round in 0..2 {
            // The second round reads what the first remembered.
            let scopes = Scopes::of("owner-a", Some("conversation-1"));
            assert_eq!(
                scopes.conversation.as_ref().and_then(|v| v.to_str().ok()),
                Some(derive("owner-a", "conversation-1").as_str()),
                "round {round}"
            );
            assert_eq!(
                scopes.caller.as_ref().and_then(|v| v.to_str().ok()),
                Some(caller("owner-a").as_str())
            );
            let without = Scopes::of("owner-a", None);
            assert!(without.conversation.is_none());
            assert_eq!(
                without.caller.as_ref().and_then(|v| v.to_str().ok()),
                Some(caller("owner-a").as_str())
            );
        }
        // Another owner with the same conversation id gets its own scope.
        let other = Scopes::of("owner-b", Some("conversation-1"));
        assert_eq!(
            other.conversation.as_ref().and_then(|v| v.to_str().ok()),
            Some(derive("owner-b", "conversation-1").as_str())
        );
        assert_ne!(
            other.conversation,
            Scopes::of("owner-a", Some("conversation-1")).conversation
        );
    }

    #[test]
    fn an_owner_and_id_never_share_a_key_with_another_pair() {
        assert_ne!(Scopes::key("a", Some("b")), Scopes::key("a:b", None));
        assert_ne!(Scopes::key("a", Some("")), Scopes::key("a", None));
        assert_ne!(Scopes::key("a", Some("b:c")), Scopes::key("a:b", Some("c")));
        assert_ne!(Scopes::key("1:a", None), Scopes::key("1", Some("a")));
    }
}
