//! Who is calling (a hash of its credential, never the credential) and which conversation a
//! request belongs to (docs/titles.md, "Conversation id").

use http::{HeaderMap, HeaderName};
use sha2::{Digest, Sha256};

use crate::auth::Credential;

/// The caller as the title API sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Hash of the caller's credential; records are owned by it. `anonymous` without one.
    pub owner: String,
    /// Holds `auth.admin_token`: sees every caller's records.
    pub admin: bool,
    /// Sent a credential (`Authorization` of any scheme, or `x-api-key`). Callers without one
    /// share the `anonymous` owner, so they may not read titles: any of them would see all.
    pub identified: bool,
}

/// The owner of records made by callers without a credential (only the admin reads them).
pub const ANONYMOUS: &str = "anonymous";

impl Caller {
    pub fn from_headers(headers: &HeaderMap, admin_token: Option<&str>) -> Self {
        let credential = Credential::of(headers);
        let admin = match (credential, admin_token) {
            (Some(credential), Some(admin)) => credential.is(admin),
            _ => false,
        };
        let owner = credential.map_or_else(
            || ANONYMOUS.to_owned(),
            |c| hash_hex(&[b"caller\0", c.identity().as_bytes()], 32),
        );
        Self {
            owner,
            admin,
            identified: credential.is_some(),
        }
    }

    /// Whether this caller may use the titles API at all.
    pub fn may_read_titles(&self) -> bool {
        self.identified || self.admin
    }

    /// The scope of what the proxy remembers of this caller's answers by their ids (the
    /// reasoning memo): its own, only with a credential. Callers without one share `anonymous`,
    /// so a lookup by id would hand one of them another's reasoning (issue 30); they get only
    /// what their own request proves (the proxy's seal).
    pub fn memo_scope(&self) -> Option<&str> {
        self.identified.then_some(self.owner.as_str())
    }

    /// The owner filter for reads: admins see everyone.
    pub fn scope(&self) -> Option<&str> {
        (!self.admin).then_some(self.owner.as_str())
    }
}

fn hash_hex(parts: &[&[u8]], hex_chars: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    // By hand: this runs on every request, and a generic hex encoder goes char by char.
    let mut text = String::with_capacity(hex_chars + 1);
    for byte in hasher.finalize().iter().take(hex_chars.div_ceil(2)) {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text.truncate(hex_chars);
    text
}

/// Headers that carry a client-chosen conversation id, in order of preference.
/// Names made once, not parsed from text on each of the several lookups every request makes.
static ID_HEADERS: [(HeaderName, &str); 6] = [
    id_header("x-conversation-id"),
    id_header("x-session-id"),
    id_header("session_id"),
    id_header("session-id"),
    // Codex 0.171 sends `thread-id` next to `session-id` (the same UUID).
    id_header("thread-id"),
    // Claude Code's session (the Messages route also sets it from `metadata.user_id`).
    id_header("x-claude-code-session-id"),
];

const fn id_header(name: &'static str) -> (HeaderName, &'static str) {
    (HeaderName::from_static(name), name)
}

/// Whether the client named its conversation in a header (`ID_HEADERS`, the one list).
pub fn has_conversation_header(headers: &HeaderMap) -> bool {
    ID_HEADERS.iter().any(|(h, _)| headers.contains_key(h))
}

/// A client-chosen conversation id that is not a safe path segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "header `{header}` must be a conversation id of 1 to 128 characters from A-Z a-z 0-9 . _ : - \
     (and not `.` or `..`)"
)]
pub struct BadConversationId {
    pub header: &'static str,
}

/// Whether `id` can stand as one URL path segment (`/titles/{id}`) and one log field as it is.
fn is_safe_segment(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        && id != "."
        && id != ".."
}

/// The conversation id: a client header, else `conv_<16 hex>` of (caller, first user text). A
/// header id that is not a safe path segment is refused, not rewritten: the client would not
/// find its title under an id it never sent.
pub fn conversation_id(
    headers: &HeaderMap,
    owner: &str,
    first_user_text: &str,
) -> Result<String, BadConversationId> {
    conversation_id_with_key(headers, None, owner, first_user_text)
}

/// `conversation_id`, with a key the body carries (Responses `prompt_cache_key`) tried after the
/// headers and before the derived hash. A body key is a cache hint, not an id the client will
/// look its title up by, so an unsafe one is hashed into a safe id rather than refused.
pub fn conversation_id_with_key(
    headers: &HeaderMap,
    body_key: Option<&str>,
    owner: &str,
    first_user_text: &str,
) -> Result<String, BadConversationId> {
    Ok(client_conversation_id(headers, body_key)?
        .unwrap_or_else(|| derived_conversation_id(owner, first_user_text)))
}

/// `conv_<16 hex>` of (caller, first user text): the id of a conversation its client named
/// nowhere.
pub fn derived_conversation_id(owner: &str, first_user_text: &str) -> String {
    format!(
        "conv_{}",
        hash_hex(&[owner.as_bytes(), b"\0", first_user_text.as_bytes()], 16)
    )
}

/// The id the client gave (a header, else the body's key), `None` when it gave none.
pub fn client_conversation_id(
    headers: &HeaderMap,
    body_key: Option<&str>,
) -> Result<Option<String>, BadConversationId> {
    for (name, header) in &ID_HEADERS {
        let Some(value) = headers.get(name) else {
            continue;
        };
        let value = value.to_str().map(str::trim).unwrap_or("\0");
        if value.is_empty() {
            continue;
        }
        return if is_safe_segment(value) {
            Ok(Some(value.to_owned()))
        } else {
            Err(BadConversationId { header })
        };
    }
    Ok(body_key
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|key| {
            if is_safe_segment(key) {
                key.to_owned()
            } else {
                format!("conv_{}", hash_hex(&[b"key\0", key.as_bytes()], 16))
            }
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(headers: &HeaderMap, owner: &str, text: &str) -> String {
        conversation_id(headers, owner, text).expect("a safe id")
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        map
    }

    #[test]
    fn codex_thread_id_then_a_body_key_then_the_hash() {
        // Codex 0.171 sends `session-id` and `thread-id`; either names the conversation.
        assert_eq!(
            conversation_id(&headers(&[("thread-id", "t-1")]), "o", "x"),
            Ok("t-1".to_owned())
        );
        assert_eq!(
            conversation_id_with_key(&headers(&[("session-id", "s-1")]), Some("k"), "o", "x"),
            Ok("s-1".to_owned())
        );
        assert_eq!(
            conversation_id_with_key(&HeaderMap::new(), Some("cache-key"), "o", "x"),
            Ok("cache-key".to_owned())
        );
        assert_eq!(
            conversation_id_with_key(&HeaderMap::new(), Some(" "), "o", "x"),
            conversation_id(&HeaderMap::new(), "o", "x")
        );
    }

    #[test]
    fn id_headers_in_order_of_preference() {
        let all = headers(&[
            ("x-conversation-id", "a"),
            ("x-session-id", "b"),
            ("session_id", "c"),
            ("session-id", "d"),
        ]);
        assert_eq!(id_of(&all, "o", "t"), "a");
        assert_eq!(
            id_of(
                &headers(&[("x-session-id", "ses_1"), ("session-id", "d")]),
                "o",
                "t"
            ),
            "ses_1"
        );
        assert_eq!(id_of(&headers(&[("session_id", "c")]), "o", "t"), "c");
        assert_eq!(id_of(&headers(&[("session-id", "d")]), "o", "t"), "d");
    }

    #[test]
    fn hashed_id_is_stable_and_depends_on_caller_and_text() {
        let none = HeaderMap::new();
        let a = id_of(&none, "owner-a", "fix the bug");
        assert!(a.starts_with("conv_") && a.len() == 21, "{a}");
        assert!(a[5..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, id_of(&none, "owner-a", "fix the bug"));
        assert_ne!(a, id_of(&none, "owner-b", "fix the bug"));
        assert_ne!(a, id_of(&none, "owner-a", "fix the other bug"));
    }

    #[test]
    fn unsafe_header_ids_are_refused_naming_the_header() {
        for id in [
            "../../etc/passwd",
            "..",
            ".",
            "a b",
            "a/b",
            "%2e",
            &"x".repeat(129),
        ] {
            assert_eq!(
                conversation_id(&headers(&[("session_id", id)]), "o", "t"),
                Err(BadConversationId {
                    header: "session_id"
                }),
                "{id}"
            );
        }
        for id in ["...", "a..b", "ses_1:2-3.4", &"x".repeat(128)] {
            assert_eq!(
                conversation_id(&headers(&[("x-conversation-id", id)]), "o", "t").as_deref(),
                Ok(id)
            );
        }
    }

    #[test]
    fn callers_are_told_apart_by_token_and_admin_is_recognised() {
        let a = Caller::from_headers(&headers(&[("authorization", "Bearer key-a")]), Some("root"));
        let b = Caller::from_headers(&headers(&[("authorization", "Bearer key-b")]), Some("root"));
        assert_ne!(a.owner, b.owner);
        assert!(!a.owner.contains("key-a"));
        assert!(!a.admin);
        let admin =
            Caller::from_headers(&headers(&[("authorization", "Bearer root")]), Some("root"));
        assert!(admin.admin);
        assert_eq!(admin.scope(), None);
        let anonymous = Caller::from_headers(&HeaderMap::new(), Some("root"));
        assert_eq!(
            (anonymous.owner.as_str(), anonymous.admin),
            ("anonymous", false)
        );
        assert!(!anonymous.may_read_titles());
        let basic = Caller::from_headers(&headers(&[("authorization", "Basic YTpi")]), None);
        assert!(basic.may_read_titles() && basic.owner != anonymous.owner);
    }
}
