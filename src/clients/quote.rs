//! opencode's prompt quoting (docs/wire.md §1 "Quoting"; the reference's quoting function and its
//! newline normalisation, step by step): a user text is sent as its own JSON string literal, quotes
//! included, but with real newlines.
//!
//! This module owns only the text transformation. It does not decide which messages are
//! quoted (the history conversion does) and it never unquotes: the transformation is lossy
//! on purpose, because the emulated client is.

use serde_json::Value;

/// The reference's nine plain substring replacements, in the order they must run.
///
/// Steps 4–9 can never match once steps 1–3 have run (after step 2 no backslash-`n` is
/// left, and the only one step 3 puts back is followed by `'`). They are kept anyway so the
/// table reads exactly like the reference and a future edit of steps 1–3 cannot silently
/// change behaviour.
const NEWLINE_REPLACEMENTS: [(&str, &str); 9] = [
    // 1. an escaped backslash followed by `n`: the user typed a literal `\n`.
    ("\\\\n", "\n"),
    // 2. the JSON escape of a real line feed.
    ("\\n", "\n"),
    // 3. opencode's own shell smoke test must keep its `\n` for printf.
    ("printf 'SHELL_OK\n' >", "printf 'SHELL_OK\\n' >"),
    ("\\\\nfor ", "\nfor "),
    ("\\nfor ", "\nfor "),
    ("\\\\n    ", "\n    "),
    ("\\n    ", "\n    "),
    ("\\\\nPY", "\nPY"),
    ("\\nPY", "\nPY"),
];

/// Quotes `text` the way opencode sends a user prompt: `serde_json`'s string serialisation
/// (surrounding quotes, `"` and `\` escaped, control characters escaped), then
/// [`normalize_newlines`].
#[must_use]
pub fn quote_prompt(text: &str) -> String {
    // Text an opencode client already quoted (`opencode run "two words"` sends the words as a
    // JSON string literal) goes as it came: quoting it again would double it.
    if is_quoted(text) {
        return text.to_owned();
    }
    // `Display` on a `Value::String` runs serde_json's own string serialiser, byte for byte
    // what `serde_json::to_string(text)` produces, without a `Result` that cannot fail for a
    // string.
    let json = Value::String(text.to_owned()).to_string();
    normalize_newlines(&json)
}

/// Whether `text` already is what quoting its content produces: a JSON string literal whose
/// quoted form is the text itself.
fn is_quoted(text: &str) -> bool {
    text.len() >= 2
        && text.starts_with('"')
        && text.ends_with('"')
        && serde_json::from_str::<String>(&text.replace('\n', "\\n"))
            .is_ok_and(|inner| normalize_newlines(&Value::String(inner).to_string()) == text)
}

/// Applies the nine newline replacements of `NEWLINE_REPLACEMENTS`, in order, to a JSON string
/// literal.
///
/// Net effect: every escaped line feed and every literal backslash-`n` become real line
/// feeds, except inside the fragment `printf 'SHELL_OK\n' >`.
#[must_use]
pub fn normalize_newlines(json_text: &str) -> String {
    // Every pattern holds a backslash-n or a real line feed; most texts have neither.
    if !json_text.contains("\\n") && !json_text.contains('\n') {
        return json_text.to_owned();
    }
    NEWLINE_REPLACEMENTS
        .iter()
        .fold(json_text.to_owned(), |text, (find, replace)| {
            // `replace` allocates even when nothing matches.
            if text.contains(find) {
                text.replace(find, replace)
            } else {
                text
            }
        })
}

#[cfg(test)]
mod tests {
    use super::{normalize_newlines, quote_prompt};
    use proptest::prelude::*;

    // The reference's quoting vectors, written out by hand (its `⏎` = "\n" here).

    #[test]
    fn plain_text_is_wrapped_in_quotes() {
        let quoted = quote_prompt("Run the QA pass");
        assert_eq!(quoted, "\"Run the QA pass\"");
        assert_eq!(quoted.chars().count(), 17);
    }

    #[test]
    fn real_line_feed_stays_a_real_line_feed() {
        assert_eq!(quote_prompt("line1\nline2"), "\"line1\nline2\"");
    }

    #[test]
    fn quotes_are_escaped_and_tab_stays_escaped() {
        assert_eq!(quote_prompt("say \"hi\"\tnow"), r#""say \"hi\"\tnow""#);
    }

    #[test]
    fn literal_backslash_n_in_a_path_becomes_a_line_feed() {
        assert_eq!(
            quote_prompt(r"C:\new\path"),
            concat!(r#""C:"#, "\n", r#"ew\\path""#)
        );
    }

    #[test]
    fn shell_ok_printf_keeps_its_literal_backslash_n() {
        assert_eq!(
            quote_prompt(r"printf 'SHELL_OK\n' > out.txt"),
            r#""printf 'SHELL_OK\n' > out.txt""#
        );
    }

    #[test]
    fn shell_ok_printf_with_a_real_line_feed_is_identical() {
        assert_eq!(
            quote_prompt("printf 'SHELL_OK\n' > out.txt"),
            r#""printf 'SHELL_OK\n' > out.txt""#
        );
    }

    #[test]
    fn two_backslashes_and_n_keep_one_escaped_backslash() {
        assert_eq!(quote_prompt(r"a\\nb"), concat!(r#""a\\"#, "\n", r#"b""#));
    }

    #[test]
    fn trailing_backslash_before_a_line_feed_loses_half_its_escape() {
        assert_eq!(quote_prompt("end\\\n"), concat!(r#""end\"#, "\n", "\""));
    }

    #[test]
    fn empty_text_is_two_quotes() {
        assert_eq!(quote_prompt(""), "\"\"");
    }

    /// `opencode run "list the files here"` sends the words already quoted (captured from opencode
    /// 1.18.33): they go as they came, not quoted twice (issue 29). Text that only looks quoted
    /// in part is quoted as any other.
    #[test]
    fn text_opencode_already_quoted_is_not_quoted_again() {
        assert_eq!(
            quote_prompt("\"list the files here\""),
            "\"list the files here\""
        );
        assert_eq!(quote_prompt("\"a\" and \"b\""), r#""\"a\" and \"b\"""#);
        assert_eq!(quote_prompt("\""), r#""\"""#);
    }

    // serde_json's string escaping rules (docs/wire.md §1 "Quoting").

    #[test]
    fn control_characters_use_short_or_lowercase_hex_escapes() {
        assert_eq!(
            quote_prompt("\r\u{8}\u{c}\u{1}\u{1f}"),
            r#""\r\b\f\u0001\u001f""#
        );
    }

    #[test]
    fn non_ascii_del_slash_and_line_separators_stay_verbatim() {
        let text = "é/\u{7f}\u{2028}\u{2029}😀";
        assert_eq!(quote_prompt(text), format!("\"{text}\""));
    }

    // `normalize_newlines` on raw JSON text, one case per kind of replacement.

    #[test]
    fn normalize_turns_both_escapes_into_line_feeds() {
        assert_eq!(normalize_newlines(r#""a\nb\\nc""#), "\"a\nb\nc\"");
    }

    #[test]
    fn normalize_restores_the_shell_ok_fragment_only_when_complete() {
        assert_eq!(
            normalize_newlines(r"printf 'SHELL_OK\n' >"),
            r"printf 'SHELL_OK\n' >"
        );
        // Without the trailing ` >` the fragment is not the smoke test.
        assert_eq!(
            normalize_newlines(r"printf 'SHELL_OK\n'"),
            "printf 'SHELL_OK\n'"
        );
    }

    #[test]
    fn normalize_handles_the_for_indent_and_heredoc_shapes() {
        assert_eq!(normalize_newlines(r"x\nfor y"), "x\nfor y");
        assert_eq!(normalize_newlines(r"x\\nfor y"), "x\nfor y");
        assert_eq!(normalize_newlines(r"x\n    y"), "x\n    y");
        assert_eq!(normalize_newlines(r"x\\n    y"), "x\n    y");
        assert_eq!(normalize_newlines(r"x\nPY"), "x\nPY");
        assert_eq!(normalize_newlines(r"x\\nPY"), "x\nPY");
    }

    #[test]
    fn normalize_leaves_text_without_backslash_n_alone() {
        let text = r#""tab\t quote\" unicode\u0001 backslash\\ end""#;
        assert_eq!(normalize_newlines(text), text);
    }

    /// Pieces that exercise every replacement, mixed with arbitrary characters.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => any::<char>().prop_map(String::from),
            1 => prop::sample::select(vec![
                "\n", "\r", "\t", "\"", "\\", "n", " ", "    ", "for ", "PY", "\\n", "\\\\n",
                "printf 'SHELL_OK", "' >", "printf 'SHELL_OK\n' >", "printf 'SHELL_OK\\n' >",
                "\u{0}", "\u{7f}", "\u{2028}", "/", "é",
            ])
            .prop_map(str::to_owned),
        ]
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop::collection::vec(piece(), 0..40).prop_map(|pieces| pieces.concat())
    }

    /// Texts for which the quoting is exactly invertible: no backslash (so no literal `\n`
    /// can be typed), no `SHELL_OK` (so the printf fragment cannot form), and not already a
    /// quoted literal (which goes as it came).
    fn invertible_text() -> impl Strategy<Value = String> {
        any_text().prop_filter("lossy input", |text| {
            !text.contains('\\') && !text.contains("SHELL_OK") && !super::is_quoted(text)
        })
    }

    proptest! {
        #[test]
        fn quoting_is_invertible_without_backslashes(text in invertible_text()) {
            let quoted = quote_prompt(&text);
            // Undo the normalisation: serde_json never emits a raw line feed, so every real
            // one came from an escaped line feed.
            let json = quoted.replace('\n', "\\n");
            let decoded: String = serde_json::from_str(&json).expect("quoted text is JSON again");
            prop_assert_eq!(decoded, text);
        }

        #[test]
        fn quoting_matches_serde_json_when_there_is_nothing_to_normalise(
            text in invertible_text().prop_filter("has a line feed", |text| !text.contains('\n'))
        ) {
            let json = serde_json::to_string(&text).expect("a string always serialises");
            prop_assert_eq!(quote_prompt(&text), json);
        }

        #[test]
        fn only_the_shell_ok_fragment_keeps_a_backslash_n(text in any_text()) {
            let quoted = quote_prompt(&text);
            prop_assert!(quoted.len() >= 2);
            prop_assert!(quoted.starts_with('"'));
            prop_assert!(quoted.ends_with('"'));
            // `#` is neither `\` nor `n`, so masking the fragments cannot create a new match.
            let masked = quoted.replace(r"printf 'SHELL_OK\n' >", "#");
            prop_assert!(!masked.contains(r"\n"), "backslash-n left in {quoted:?}");
        }
    }
}
