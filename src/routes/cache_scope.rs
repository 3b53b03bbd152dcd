//! The request's prompt-cache scope, stamped for the harness (`harness::cache_key`): the caller's
//! conversation, as the client named it, hashed with the caller, and the caller's own scope for
//! a key the client names in its body. The route stamps it because only
//! it knows both (the caller's hash, the conversation-id headers); the harness stays blind to
//! credentials and to which headers name a conversation.

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
    let value = id.and_then(|id| HeaderValue::from_str(&derive(owner, &id)).ok());
    let mut call = call.clone();
    call.headers.remove(SCOPE_HEADER);
    call.headers.remove(CALLER_HEADER);
    if let Some(value) = value {
        call.headers.insert(SCOPE_HEADER, value);
    }
    if let Ok(scope) = HeaderValue::from_str(&caller(owner)) {
        call.headers.insert(CALLER_HEADER, scope);
    }
    call
}
