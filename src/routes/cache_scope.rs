//! The request's prompt-cache scope, stamped for the harness (`harness::cache_key`): the caller's
//! conversation, as the client named it, hashed with the caller. The route stamps it because only
//! it knows both (the caller's hash, the conversation-id headers); the harness stays blind to
//! credentials and to which headers name a conversation.

use std::borrow::Cow;

use http::HeaderValue;

use crate::harness::cache_key::{SCOPE_HEADER, derive};
use crate::routes::front::Call;
use crate::titles::identity::client_conversation_id;

/// `call` as the harness sees it: with the scope of `owner`'s conversation when the client named
/// one in its headers, and never with a scope the client sent itself. Borrowed (nothing copied)
/// when there is nothing to stamp or remove.
pub fn stamped<'a>(call: &'a Call, owner: &str) -> Cow<'a, Call> {
    // An unsafe id is refused later, when the turn is identified; here it names no scope.
    let id = client_conversation_id(&call.headers, None).ok().flatten();
    let value = id.and_then(|id| HeaderValue::from_str(&derive(owner, &id)).ok());
    if value.is_none() && !call.headers.contains_key(SCOPE_HEADER) {
        return Cow::Borrowed(call);
    }
    let mut call = call.clone();
    call.headers.remove(SCOPE_HEADER);
    if let Some(value) = value {
        call.headers.insert(SCOPE_HEADER, value);
    }
    Cow::Owned(call)
}
