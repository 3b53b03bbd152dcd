//! The path a forwarded `/v1/*` request takes upstream. The client's path is percent-decoded (so
//! `%2e%2e`, `%2f` and `%5c` mean what they spell), split on `/` and `\` (browsers and the URL
//! standard treat both as separators), its dot segments resolved, and every segment re-encoded.
//! A path that would climb above the upstream base path, that has a `.` or `..` segment carrying
//! `;` parameters (`..;x`, which Tomcat and Spring resolve as `..`), or that still spells a dot
//! segment or a separator after a second decoding (double encoding), is refused: it is never sent.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode, utf8_percent_encode};

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path climbs above the API root with `..`")]
    Escapes,
    #[error("the path hides a dot segment or a separator behind double percent-encoding")]
    DoubleEncoded,
    #[error("the path has a `.` or `..` segment with `;` parameters, which some servers climb")]
    DotParameters,
}

/// Everything but RFC 3986 unreserved characters, sub-delims, `:` and `@` is encoded, `%` too, so
/// the upstream decodes each segment to exactly what was checked here.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// What of a client's query goes upstream: its parameters in their order, without any whose
/// name looks like a credential (`key`, `api_key`, `access_token`, `client_secret`, …, read
/// decoded and case-insensitively), which the model server must get from the proxy's key, never
/// in a URL that servers, proxies and the inspector show. `None` when nothing is left.
pub fn forwardable_query(query: &str) -> Option<String> {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let name = pair.split_once('=').map_or(*pair, |(name, _)| name);
            !names_a_credential(name)
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// Parameter names (decoded, lower case, `-` and `_` dropped) holding any of these are taken for
/// a credential; a harmless name caught by them is only left out.
const CREDENTIAL_WORDS: [&str; 7] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
];

fn names_a_credential(raw: &str) -> bool {
    let plus_as_space = raw.replace('+', " ");
    let decoded = percent_decode(plus_as_space.as_bytes()).decode_utf8_lossy();
    let name: String = decoded
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' ' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    CREDENTIAL_WORDS.iter().any(|word| name.contains(word))
}

/// How many further decodings are tried when looking for a hidden dot segment or separator.
const DEEP_DECODINGS: usize = 4;

/// `raw` is what follows `/v1/` in the request target, still percent-encoded and without the
/// query. Returns the path to append to the upstream base URL, starting with `/`.
pub fn relative_path(raw: &str) -> Result<String, PathError> {
    let mut segments: Vec<Vec<u8>> = Vec::new();
    for raw_segment in raw.split(['/', '\\']) {
        let decoded: Vec<u8> = percent_decode(raw_segment.as_bytes()).collect();
        for piece in decoded.split(|b| *b == b'/' || *b == b'\\') {
            if hides_traversal(piece) {
                return Err(PathError::DoubleEncoded);
            }
            if piece.contains(&b';') && is_dot_segment(piece) {
                return Err(PathError::DotParameters);
            }
            match piece {
                b"." => {}
                b".." => {
                    segments.pop().ok_or(PathError::Escapes)?;
                }
                _ => segments.push(piece.to_vec()),
            }
        }
    }
    let mut out = String::with_capacity(raw.len() + 1);
    for segment in &segments {
        out.push('/');
        let text = String::from_utf8_lossy(segment);
        if matches!(text, std::borrow::Cow::Owned(_)) {
            // Not UTF-8: encode the bytes themselves.
            out.extend(percent_encoding::percent_encode(segment, SEGMENT));
        } else {
            out.extend(utf8_percent_encode(&text, SEGMENT));
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Whether `piece` is `.` or `..` once its `;` parameters are cut off: Tomcat and Spring read
/// `..;x` as `..`, so such a segment is a climb for them whatever the proxy makes of it.
fn is_dot_segment(piece: &[u8]) -> bool {
    let name = piece.split(|b| *b == b';').next().unwrap_or_default();
    matches!(name, b"." | b"..")
}

/// Whether decoding `piece` again yields a separator or a dot segment it did not show.
fn hides_traversal(piece: &[u8]) -> bool {
    let mut current = piece.to_vec();
    for _ in 0..DEEP_DECODINGS {
        let next: Vec<u8> = percent_decode(&current).collect();
        if next == current {
            return false;
        }
        if next.contains(&b'/') || next.contains(&b'\\') || is_dot_segment(&next) {
            return true;
        }
        current = next;
    }
    // Still decoding after that many rounds: nothing honest looks like this.
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_keep_their_meaning() {
        for (raw, want) in [
            ("models", "/models"),
            ("files/abc/content", "/files/abc/content"),
            ("files/a%20b", "/files/a%20b"),
            ("files/x/../y", "/files/y"),
            ("files/./y", "/files/y"),
            ("files/", "/files/"),
            ("", "/"),
            ("a%3Fb", "/a%3Fb"),
            ("100%25", "/100%25"),
            ("%FF", "/%FF"),
            ("a;b/c", "/a;b/c"),
            ("...;x", "/...;x"),
            (";x", "/;x"),
            ("caf%C3%A9", "/caf%C3%A9"),
        ] {
            assert_eq!(relative_path(raw).as_deref(), Ok(want), "{raw}");
        }
    }

    #[test]
    fn every_spelling_of_a_climb_is_refused() {
        for raw in [
            "..",
            "../x",
            "%2e%2e/x",
            "%2E%2e",
            ".%2E/x",
            "a/../../x",
            "..%2fx",
            "a%2F..%2F..%2Fx",
            "..\\x",
            "..%5cx",
            "a/b/../../../x",
        ] {
            assert_eq!(relative_path(raw), Err(PathError::Escapes), "{raw}");
        }
        for raw in [
            "..;/x",
            "%2e%2e;/x",
            "a/%2E.;p=1/x",
            ".;/x",
            "a/.;/b",
            "..%3B/x",
            "..;a;b/x",
        ] {
            assert_eq!(relative_path(raw), Err(PathError::DotParameters), "{raw}");
        }
        for raw in [
            "%252e%252e/x",
            "a%252f..",
            "%25252e%25252e",
            "x%255cy",
            "%252e%252e;/x",
            "..%253b/x",
        ] {
            assert_eq!(relative_path(raw), Err(PathError::DoubleEncoded), "{raw}");
        }
    }

    #[test]
    fn a_query_loses_every_parameter_named_like_a_credential() {
        assert_eq!(
            forwardable_query("key=S&api-version=1&Access_Token=S&%6Bey=S&x=1").as_deref(),
            Some("api-version=1&x=1")
        );
        assert_eq!(
            forwardable_query("api_key=S&API-KEY=S&client_secret=S"),
            None
        );
        assert_eq!(forwardable_query("beta=true").as_deref(), Some("beta=true"));
        assert_eq!(forwardable_query(""), None);
    }
}
