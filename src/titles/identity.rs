//! Who is calling (a hash of its bearer token, never the token) and which conversation a request
//! belongs to (PRODUCT §4).

use http::{HeaderMap, header};
use sha2::{Digest, Sha256};

/// The caller as the title API sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Hash of the caller's credential; records are owned by it.
    pub owner: String,
    /// Holds `auth.admin_token`: sees every caller's records.
    pub admin: bool,
}

impl Caller {
    pub fn from_headers(headers: &HeaderMap, admin_token: Option<&str>) -> Self {
        let token = bearer(headers);
        let admin = match (token, admin_token) {
            (Some(token), Some(admin)) => constant_time_eq(token.as_bytes(), admin.as_bytes()),
            _ => false,
        };
        let owner = match token {
            Some(token) => hash_hex(&[b"caller\0", token.as_bytes()], 32),
            None => "anonymous".to_owned(),
        };
        Self { owner, admin }
    }

    /// The owner filter for reads: admins see everyone.
    pub fn scope(&self) -> Option<&str> {
        (!self.admin).then_some(self.owner.as_str())
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?
        .trim();
    (!token.is_empty()).then_some(token)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hash_hex(parts: &[&[u8]], hex_chars: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let mut text = hex::encode(hasher.finalize());
    text.truncate(hex_chars);
    text
}

/// Headers that carry a client-chosen conversation id, in order of preference.
const ID_HEADERS: [&str; 4] = [
    "x-conversation-id",
    "x-session-id",
    "session_id",
    "session-id",
];

/// The conversation id: a client header, else `conv_<16 hex>` of (caller, first user text).
pub fn conversation_id(headers: &HeaderMap, owner: &str, first_user_text: &str) -> String {
    client_conversation_id(headers).unwrap_or_else(|| {
        format!(
            "conv_{}",
            hash_hex(&[owner.as_bytes(), b"\0", first_user_text.as_bytes()], 16)
        )
    })
}

/// The id the client named in a header, made safe for URLs and logs.
pub fn client_conversation_id(headers: &HeaderMap) -> Option<String> {
    for name in ID_HEADERS {
        if let Some(value) = headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            // Ids appear in URLs and logs: anything unusual is hashed into a safe one.
            if value.len() <= 128
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
            {
                return Some(value.to_owned());
            }
            return Some(format!(
                "conv_{}",
                hash_hex(&[b"header\0", value.as_bytes()], 16)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn id_headers_in_order_of_preference() {
        let all = headers(&[
            ("x-conversation-id", "a"),
            ("x-session-id", "b"),
            ("session_id", "c"),
            ("session-id", "d"),
        ]);
        assert_eq!(conversation_id(&all, "o", "t"), "a");
        assert_eq!(
            conversation_id(
                &headers(&[("x-session-id", "ses_1"), ("session-id", "d")]),
                "o",
                "t"
            ),
            "ses_1"
        );
        assert_eq!(
            conversation_id(&headers(&[("session_id", "c")]), "o", "t"),
            "c"
        );
        assert_eq!(
            conversation_id(&headers(&[("session-id", "d")]), "o", "t"),
            "d"
        );
    }

    #[test]
    fn hashed_id_is_stable_and_depends_on_caller_and_text() {
        let none = HeaderMap::new();
        let a = conversation_id(&none, "owner-a", "fix the bug");
        assert!(a.starts_with("conv_") && a.len() == 21, "{a}");
        assert!(a[5..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, conversation_id(&none, "owner-a", "fix the bug"));
        assert_ne!(a, conversation_id(&none, "owner-b", "fix the bug"));
        assert_ne!(a, conversation_id(&none, "owner-a", "fix the other bug"));
    }

    #[test]
    fn unsafe_header_ids_are_hashed() {
        let id = conversation_id(
            &headers(&[("x-conversation-id", "../../etc/passwd")]),
            "o",
            "t",
        );
        assert!(id.starts_with("conv_") && !id.contains('/'), "{id}");
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
    }
}
