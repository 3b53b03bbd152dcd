//! The path a forwarded `/v1/*` request takes upstream. The client's path is percent-decoded (so
//! `%2e%2e`, `%2f` and `%5c` mean what they spell), split on `/` and `\` (browsers and the URL
//! standard treat both as separators), its dot segments resolved, and every segment re-encoded.
//! A path that would climb above the upstream base path, or that still spells a dot segment or a
//! separator after a second decoding (double encoding), is refused: it is never sent.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode, utf8_percent_encode};

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path climbs above the API root with `..`")]
    Escapes,
    #[error("the path hides a dot segment or a separator behind double percent-encoding")]
    DoubleEncoded,
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

/// Whether decoding `piece` again yields a separator or a dot segment it did not show.
fn hides_traversal(piece: &[u8]) -> bool {
    let mut current = piece.to_vec();
    for _ in 0..DEEP_DECODINGS {
        let next: Vec<u8> = percent_decode(&current).collect();
        if next == current {
            return false;
        }
        if next.contains(&b'/') || next.contains(&b'\\') || matches!(next.as_slice(), b"." | b"..")
        {
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
        for raw in ["%252e%252e/x", "a%252f..", "%25252e%25252e", "x%255cy"] {
            assert_eq!(relative_path(raw), Err(PathError::DoubleEncoded), "{raw}");
        }
    }
}
