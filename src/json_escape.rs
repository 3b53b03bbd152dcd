//! JSON text written byte for byte as serde_json writes it compactly, but faster for long
//! strings: `"` and `\` escaped, `\b \t \n \f \r` short, every other control character as
//! `\u00xx` (lowercase hex), everything else (non-ASCII, DEL, `/`) as it is; a `Value` with its
//! strings written so (`push_value`).
//!
//! serde_json looks every byte up in a table. What a harness rebuilds is mostly long runs that
//! need no escape (tool outputs, file contents, a history's texts), so this looks for the next
//! byte to escape eight at a time, as serde_json's own reader does (`SliceRead::skip_to_escape`),
//! and copies each run whole. Safe code only; the property test holds it to serde_json's bytes.

const ONE_BYTES: u64 = u64::MAX / 255;
const HIGH_BITS: u64 = ONE_BYTES << 7;

/// Appends `text` escaped, without the quotes around it.
pub fn push_escaped(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    // Most texts grow by a few escapes; one reservation spares the run copies their own.
    out.reserve(bytes.len() + bytes.len() / 16 + 8);
    let mut run_start = 0;
    let mut at = 0;
    while let Some(found) = next_escape(bytes, at) {
        out.extend_from_slice(&bytes[run_start..found]);
        push_escape(out, bytes[found]);
        at = found + 1;
        run_start = at;
    }
    out.extend_from_slice(&bytes[run_start..]);
}

/// Appends `text` as a JSON string, quotes and all.
pub fn push_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    push_escaped(out, text);
    out.push(b'"');
}

/// Appends `value` as compact JSON, as `serde_json::to_writer` would (its numbers written by
/// serde_json itself).
pub fn push_value(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing a number into a Vec cannot fail.
        Value::Number(number) => {
            let _ = serde_json::to_writer(&mut *out, number);
        }
        Value::String(text) => push_string(out, text),
        Value::Array(items) => push_array(out, items, |item, out| push_value(out, item)),
        Value::Object(fields) => {
            out.push(b'{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_string(out, key);
                out.push(b':');
                push_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// `items` as a JSON array, each written by `write`.
pub fn push_array<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&T, &mut Vec<u8>)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(item, out);
    }
    out.push(b']');
}

/// The index of the first byte at or after `from` that needs an escape.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut chunks = rest.chunks_exact(8);
    for (i, chunk) in chunks.by_ref().enumerate() {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let found = escapes_in(u64::from_le_bytes(word));
        if found != 0 {
            return Some(from + i * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    let tail_start = rest.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .position(|&b| needs_escape(b))
        .map(|i| from + tail_start + i)
}

/// The high bit of each byte of `word` that is a control character, `"` or `\` (Mycroft's
/// zero-byte test; a byte ≥ 0x80 never matches, so UTF-8 passes through).
fn escapes_in(word: u64) -> u64 {
    let control = word.wrapping_sub(ONE_BYTES * 0x20) & !word;
    let quote = word ^ (ONE_BYTES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONE_BYTES) & !quote;
    let backslash = word ^ (ONE_BYTES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONE_BYTES) & !backslash;
    (control | quote | backslash) & HIGH_BITS
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

fn push_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\t' => b't',
        b'\r' => b'r',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        push_string(&mut out, text);
        String::from_utf8(out).expect("UTF-8 in, UTF-8 out")
    }

    #[test]
    fn every_byte_below_0x80_is_written_as_serde_json_writes_it() {
        for byte in 0u8..0x80 {
            // Alone, inside a word-long run, and at each place of a word.
            let alone = char::from(byte).to_string();
            for text in [
                alone.clone(),
                format!("abcdefgh{alone}ijklmnop"),
                format!("abc{alone}"),
            ] {
                assert_eq!(written(&text), serde_json::to_string(&text).expect("str"));
            }
        }
    }

    #[test]
    fn long_runs_and_non_ascii_are_copied_whole() {
        let text = "fn main() {\n\tprintln!(\"héllo 😀 \\ \u{7f}\");\n}\n".repeat(50);
        assert_eq!(written(&text), serde_json::to_string(&text).expect("str"));
    }

    fn any_value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[a-z\"\\\\\n]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_value_the_same_bytes_as_serde_json(value in any_value()) {
            let mut out = Vec::new();
            push_value(&mut out, &value);
            prop_assert_eq!(out, serde_json::to_vec(&value).expect("JSON"));
        }

        #[test]
        fn the_same_bytes_as_serde_json(text in "(?s)\\PC*|[\\x00-\\x7f]*|[a-z\"\\\\\\n\\t\\x00-\\x1f]{0,40}") {
            prop_assert_eq!(written(&text), serde_json::to_string(&text).expect("str"));
        }

        #[test]
        fn any_string_the_same_bytes_as_serde_json(text in any::<String>()) {
            prop_assert_eq!(written(&text), serde_json::to_string(&text).expect("str"));
        }
    }
}
