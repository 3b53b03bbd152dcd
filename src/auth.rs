//! Who is calling, as far as credentials go: the credential a request carries (`Authorization`
//! with any scheme in any case, or `x-api-key`), the admin token, and the optional inbound keys
//! (`auth.keys`, stored as SHA-256 hashes). Secrets are compared in constant time (`subtle`) and
//! never kept or logged; only hashes leave this module.

use http::{HeaderMap, HeaderName, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The credential of a request, borrowed from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credential<'a> {
    /// Lower-cased scheme (`bearer`, `basic`, …); `bearer` for `x-api-key`, which carries the
    /// same kind of key.
    scheme: &'a str,
    /// What follows the scheme (the key of a bearer token or `x-api-key`).
    secret: &'a str,
}

impl<'a> Credential<'a> {
    /// `Authorization` first, then `x-api-key`, then `x-goog-api-key`. An empty or unreadable
    /// value is no credential.
    pub fn of(headers: &'a HeaderMap) -> Option<Self> {
        if let Some(value) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            // A bare value without a scheme is taken as a key, as some clients send it.
            let (scheme, secret) = value.split_once([' ', '\t']).unwrap_or(("bearer", value));
            let secret = secret.trim();
            if scheme == "bearer" && secret.eq_ignore_ascii_case("bearer") {
                // `Bearer ` with its token missing (the header value was trimmed).
                return None;
            }
            let scheme = if scheme.eq_ignore_ascii_case("bearer") {
                "bearer"
            } else {
                scheme
            };
            return (!secret.is_empty()).then_some(Self { scheme, secret });
        }
        // Google's key header too: a Gemini client reads its titles with the key it sends. Names
        // made once: a lookup by text parses the name on every request.
        static KEY_HEADERS: [HeaderName; 2] = [
            HeaderName::from_static("x-api-key"),
            HeaderName::from_static("x-goog-api-key"),
        ];
        KEY_HEADERS
            .iter()
            .find_map(|name| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
            })
            .map(|secret| Self {
                scheme: "bearer",
                secret,
            })
    }

    /// The key itself, when the credential is a key (bearer token or `x-api-key`).
    fn key(&self) -> Option<&'a str> {
        (self.scheme == "bearer").then_some(self.secret)
    }

    /// A stable text naming this credential, for hashing: the key for a key (so a bearer token and
    /// the same `x-api-key` are one caller, and owners created before this scheme stay valid),
    /// else the lower-cased scheme and the secret.
    pub fn identity(&self) -> String {
        match self.key() {
            Some(key) => key.to_owned(),
            None => format!("{} {}", self.scheme.to_ascii_lowercase(), self.secret),
        }
    }

    /// Whether this is the admin token (compared in constant time).
    pub fn is(&self, token: &str) -> bool {
        self.key()
            .is_some_and(|key| bool::from(key.as_bytes().ct_eq(token.as_bytes())))
    }
}

/// The configured inbound keys' hashes; empty means no key is required.
#[derive(Debug, Clone, Default)]
pub struct InboundKeys(Vec<[u8; 32]>);

impl InboundKeys {
    /// From `auth.keys` (hex, validated by config; an unreadable entry matches nothing).
    pub fn from_hex(keys: &[String]) -> Self {
        Self(
            keys.iter()
                .filter_map(|k| hex::decode(k.trim()).ok()?.try_into().ok())
                .collect(),
        )
    }

    pub fn required(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether the request carries one of the keys. Every configured hash is compared, in
    /// constant time, whatever matched first.
    pub fn admit(&self, credential: Option<Credential<'_>>) -> bool {
        let Some(key) = credential.and_then(|c| c.key()) else {
            return false;
        };
        let hash: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, known| {
                found | known.ct_eq(&hash)
            })
            .into()
    }
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

    fn identity(pairs: &[(&str, &str)]) -> Option<String> {
        Credential::of(&headers(pairs)).map(|c| c.identity())
    }

    #[test]
    fn any_scheme_in_any_case_and_x_api_key() {
        assert_eq!(
            identity(&[("authorization", "Bearer k")]).as_deref(),
            Some("k")
        );
        assert_eq!(
            identity(&[("authorization", "BEARER k")]).as_deref(),
            Some("k")
        );
        assert_eq!(
            identity(&[("authorization", "bearer   k ")]).as_deref(),
            Some("k")
        );
        assert_eq!(identity(&[("x-api-key", "k")]).as_deref(), Some("k"));
        assert_eq!(
            identity(&[("x-goog-api-key", "k")]),
            identity(&[("x-api-key", "k")]),
            "Google's key header is the same caller"
        );
        assert_eq!(
            identity(&[("authorization", "Basic YTpi")]).as_deref(),
            Some("basic YTpi")
        );
        assert_eq!(
            identity(&[("authorization", "BASIC YTpi")]).as_deref(),
            Some("basic YTpi")
        );
        assert_eq!(
            identity(&[("authorization", "k-bare")]).as_deref(),
            Some("k-bare")
        );
        for none in [
            &[][..],
            &[("authorization", "  ")],
            &[("authorization", "Bearer ")],
            &[("x-api-key", "")],
        ] {
            assert_eq!(identity(none), None, "{none:?}");
        }
        // Authorization wins over x-api-key.
        assert_eq!(
            identity(&[("authorization", "Bearer a"), ("x-api-key", "b")]).as_deref(),
            Some("a")
        );
    }

    #[test]
    fn inbound_keys_match_by_hash_only() {
        let keys = InboundKeys::from_hex(&[
            hex::encode(Sha256::digest(b"key-one")),
            hex::encode(Sha256::digest(b"key-two")).to_uppercase(),
        ]);
        assert!(keys.required());
        let admit = |pairs: &[(&str, &str)]| keys.admit(Credential::of(&headers(pairs)));
        assert!(admit(&[("authorization", "Bearer key-one")]));
        assert!(admit(&[("x-api-key", "key-two")]));
        assert!(!admit(&[("authorization", "Bearer key-on")]));
        assert!(!admit(&[("authorization", "Basic key-one")]));
        assert!(!admit(&[]));
        assert!(!InboundKeys::default().required());
    }
}
