//! Turns a titler model's raw answer into a session title: strips leaked `<think>` reasoning, then applies
//! the reference's `sanitize` contract (docs/wire.md §2) with a configurable clamp
//! (`titles.max_chars`, 50 in the product; the reference's own constant is 60).
//!
//! Pure string work: no I/O, no config, no logging (title text must never be logged above `debug`, and
//! this module is not the place to decide that). Like the reference it does **not** strip `Title:`-style labels,
//! reject long answers, or change case, punctuation or emoji. `reasoning_content` deltas are a separate
//! stream field and never reach this module; only reasoning inlined into the text is handled here.

use std::borrow::Cow;

/// The reasoning-block delimiters, matched ASCII-case-insensitively (`<THINK>`, `</Think>`, …).
const OPEN_TAG: &[u8] = b"<think>";
const CLOSE_TAG: &[u8] = b"</think>";

/// The quote characters the reference deletes; typographic quotes (`“ ” ‘ ’ « »`) are deliberately kept.
const ASCII_QUOTES: [char; 3] = ['"', '\'', '`'];

/// Removes reasoning that a model inlined into its answer text, returning the rest untouched.
///
/// - Every `<think>…</think>` block is removed, tags included. Blocks do not nest: the first `</think>`
///   after a `<think>` ends the block.
/// - A `<think>` that is never closed swallows everything after it (the model was cut off mid-thought, so
///   nothing after the tag is an answer); at the start of the text that leaves nothing.
/// - A `</think>` with no open block (some servers put `<think>` in the prompt and omit it from the
///   output) ends reasoning that began at the start of the text: everything before it, including any
///   answer text kept so far, is dropped. This also cleans up the tail of a nested block
///   (`<think>a<think>b</think>c</think>T` → `T`).
/// - Tag names are matched case-insensitively; tags with attributes or spaces (`<think x>`) are not tags.
///
/// Whitespace around removed blocks is left in place; [`sanitize_title`] trims it. Text without any tag
/// is returned borrowed.
#[must_use]
pub fn strip_reasoning(raw: &str) -> Cow<'_, str> {
    // Byte ranges of `raw` that survive, in order.
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut cursor = 0;
    loop {
        let open = find_tag(raw, cursor, OPEN_TAG);
        let close = find_tag(raw, cursor, CLOSE_TAG);
        match (open, close) {
            (None, None) => {
                kept.push((cursor, raw.len()));
                break;
            }
            // The two tags differ at their second byte, so they never start at the same offset.
            (Some(open), Some(close)) if close < open => {
                kept.clear();
                cursor = close + CLOSE_TAG.len();
            }
            (None, Some(close)) => {
                kept.clear();
                cursor = close + CLOSE_TAG.len();
            }
            (Some(open), _) => {
                kept.push((cursor, open));
                match find_tag(raw, open + OPEN_TAG.len(), CLOSE_TAG) {
                    Some(end) => cursor = end + CLOSE_TAG.len(),
                    None => break,
                }
            }
        }
    }
    kept.retain(|(start, end)| start < end);
    match kept.as_slice() {
        [] => Cow::Borrowed(""),
        [(start, end)] => Cow::Borrowed(&raw[*start..*end]),
        spans => Cow::Owned(
            spans
                .iter()
                .map(|(start, end)| &raw[*start..*end])
                .collect(),
        ),
    }
}

/// Finds `tag` (ASCII, matched case-insensitively) in `haystack` at or after byte `from`. A match starts
/// at an ASCII `<`, so the returned offset is always a char boundary.
fn find_tag(haystack: &str, from: usize, tag: &[u8]) -> Option<usize> {
    haystack
        .as_bytes()
        .get(from..)?
        .windows(tag.len())
        .position(|window| window.eq_ignore_ascii_case(tag))
        .map(|offset| from + offset)
}

/// The title to store for a titler answer, or `None` when nothing usable is left.
///
/// [`strip_reasoning`] first, then the reference's rules in order: (1) trim Unicode `White_Space`; (2) keep only
/// the text before the first `\n` or `\r`; (3) delete every `"`, `'` and `` ` ``; (4) collapse each
/// whitespace run to one ASCII space; (5) trim; (6) empty → `None`; (7) keep the first `max_chars`
/// Unicode scalar values, no ellipsis, and trim once more.
///
/// Decisions where the contract is silent: the clamp counts scalar values (`char`s), not bytes and not
/// grapheme clusters, so it may split a multi-scalar emoji (a ZWJ family, a flag) or a base letter from
/// its combining mark; other line breaks such as U+0085 and U+2028 do not end the line in rule 2 but are
/// whitespace, so rule 4 turns them into spaces; zero-width characters that are not `White_Space`
/// (U+200B, U+200D) are kept; `max_chars == 0` always yields `None`, never `Some("")`.
#[must_use]
pub fn sanitize_title(raw: &str, max_chars: usize) -> Option<String> {
    let answer = strip_reasoning(raw);
    // A structured title answer (Codex's title request asks for `{"title": …}`): its title.
    let structured = json_title(answer.trim());
    let trimmed = structured.as_deref().unwrap_or(&answer).trim();
    let first_line = trimmed
        .find(['\n', '\r'])
        .map_or(trimmed, |end| &trimmed[..end]);
    let unquoted: String = first_line
        .chars()
        .filter(|ch| !ASCII_QUOTES.contains(ch))
        .collect();
    // Rules 4 and 5 together: splitting on whitespace runs and joining with one space collapses every
    // inner run and drops the leading and trailing ones.
    let collapsed = unquoted.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    let clamped = collapsed
        .char_indices()
        .nth(max_chars)
        .map_or(collapsed.as_str(), |(end, _)| &collapsed[..end]);
    let title = clamped.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

/// The `title` string of an answer that is a JSON object, e.g. `{"title":"Fix flaky test"}`.
fn json_title(answer: &str) -> Option<String> {
    if !answer.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(answer)
        .ok()?
        .get("title")?
    {
        serde_json::Value::String(title) => Some(title.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference's own clamp (60), to show the original contract.
    const WCODE_CLAMP: usize = 60;
    /// The product's `titles.max_chars` default (docs/configuration.md).
    const PRODUCT_CLAMP: usize = 50;

    fn title(raw: &str, max_chars: usize) -> Option<String> {
        sanitize_title(raw, max_chars)
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    #[test]
    fn a_json_title_answer_gives_its_title() {
        assert_eq!(
            title("{\"title\":\"Fix the \\\"flaky\\\" test\"}", 50),
            some("Fix the flaky test")
        );
        assert_eq!(title("{\"name\":\"x\"}", 50), some("{name:x}"));
    }

    // --- the reference's test: quotes stripped and clamped, at the product clamp and at its own ---

    #[test]
    fn strips_ascii_quotes_and_backticks() {
        for max in [PRODUCT_CLAMP, WCODE_CLAMP] {
            assert_eq!(title("`\"retry backoff\"`", max), some("retry backoff"));
            assert_eq!(title("  `\"retry backoff\"`  ", max), some("retry backoff"));
            assert_eq!(title("don't", max), some("dont"));
        }
    }

    #[test]
    fn keeps_only_the_first_line() {
        for max in [PRODUCT_CLAMP, WCODE_CLAMP] {
            assert_eq!(
                title("Retry backoff.\nsecond line ignored", max),
                some("Retry backoff.")
            );
            assert_eq!(
                title("Retry backoff.\r\nsecond", max),
                some("Retry backoff.")
            );
            assert_eq!(title("Retry backoff.\rsecond", max), some("Retry backoff."));
            // Rule 1 trims before rule 2 looks for the line break.
            assert_eq!(
                title("\n\n  Retry backoff.\nmore", max),
                some("Retry backoff.")
            );
        }
    }

    #[test]
    fn collapses_whitespace_runs() {
        for max in [PRODUCT_CLAMP, WCODE_CLAMP] {
            assert_eq!(title("a\t\tb   c", max), some("a b c"));
            // Quotes go before whitespace collapses, so their neighbours merge into one space.
            assert_eq!(title("a ' b", max), some("a b"));
        }
    }

    #[test]
    fn clamps_to_max_chars_without_ellipsis() {
        let eighty = "x".repeat(80);
        assert_eq!(title(&eighty, PRODUCT_CLAMP), Some("x".repeat(50)));
        assert_eq!(title(&eighty, WCODE_CLAMP), Some("x".repeat(60)));
    }

    #[test]
    fn the_clamp_never_leaves_a_trailing_space() {
        // Collapsed to 49×y + " tail" (54 chars); the first 50 end in the space, which the last trim drops.
        let product = format!("{}  tail", "y".repeat(49));
        assert_eq!(title(&product, PRODUCT_CLAMP), Some("y".repeat(49)));
        // The reference's own vector: 59×y + " tail", clamped at 60.
        let wcode = format!("{}  tail", "y".repeat(59));
        assert_eq!(title(&wcode, WCODE_CLAMP), Some("y".repeat(59)));
        // The product vector fits whole under the reference's clamp.
        assert_eq!(
            title(&product, WCODE_CLAMP),
            Some(format!("{} tail", "y".repeat(49)))
        );
    }

    // --- the reference's test: an empty or multiline-only answer is rejected ---

    #[test]
    fn rejects_an_empty_or_blank_answer() {
        for max in [PRODUCT_CLAMP, WCODE_CLAMP] {
            assert_eq!(title("", max), None);
            assert_eq!(title("   \n\t\n  ", max), None);
            assert_eq!(title("\"\"``''", max), None);
        }
    }

    #[test]
    fn an_answer_of_only_quotes_is_rejected() {
        assert_eq!(title("\" \" ' ' ` `", PRODUCT_CLAMP), None);
        assert_eq!(title("'''", PRODUCT_CLAMP), None);
        // Quotes on the first line, text only on the second: the second line never counts.
        assert_eq!(title("\"\"\nReal title", PRODUCT_CLAMP), None);
    }

    #[test]
    fn a_zero_clamp_yields_none() {
        assert_eq!(title("Retry backoff", 0), None);
    }

    #[test]
    fn does_not_strip_labels_or_change_case_and_punctuation() {
        assert_eq!(
            title("Title: Fix the LOGIN bug!", PRODUCT_CLAMP),
            some("Title: Fix the LOGIN bug!")
        );
    }

    // --- reasoning blocks ---

    #[test]
    fn drops_a_think_block_before_the_title() {
        assert_eq!(
            title(
                "<think>The user wants a title.</think>\n\nRetry backoff in HTTP client",
                PRODUCT_CLAMP
            ),
            some("Retry backoff in HTTP client")
        );
    }

    #[test]
    fn drops_a_multi_line_think_block() {
        let raw = "<think>\nFirst, the user asks about login.\nSo the topic is auth.\n</think>\n\nFix login redirect";
        assert_eq!(title(raw, PRODUCT_CLAMP), some("Fix login redirect"));
    }

    #[test]
    fn think_tags_match_case_insensitively() {
        assert_eq!(
            title("<THINK>hmm</Think>Parser refactor", PRODUCT_CLAMP),
            some("Parser refactor")
        );
    }

    #[test]
    fn an_unterminated_think_swallows_the_rest() {
        assert_eq!(strip_reasoning("<think>still reasoning\nabout it"), "");
        assert_eq!(
            title("<think>still reasoning\nabout it", PRODUCT_CLAMP),
            None
        );
        assert_eq!(strip_reasoning("Answer <think>cut off"), "Answer ");
    }

    #[test]
    fn a_leading_close_tag_ends_reasoning_without_an_opener() {
        assert_eq!(
            title(
                "The user asks about caching.\n</think>\n\nCache invalidation",
                PRODUCT_CLAMP
            ),
            some("Cache invalidation")
        );
        assert_eq!(strip_reasoning("reasoning</think>"), "");
    }

    #[test]
    fn strip_reasoning_removes_every_block() {
        assert_eq!(
            strip_reasoning("a<think>x</think>b<think>y</think>c"),
            "abc"
        );
        assert_eq!(strip_reasoning("<think>a<think>b</think>c</think>T"), "T");
        assert_eq!(strip_reasoning("<think>a</think>b</think>c"), "c");
    }

    #[test]
    fn strip_reasoning_borrows_when_it_can() {
        assert!(matches!(
            strip_reasoning("plain title"),
            Cow::Borrowed("plain title")
        ));
        assert!(matches!(
            strip_reasoning("<think>x</think>T"),
            Cow::Borrowed("T")
        ));
        assert!(matches!(
            strip_reasoning("a<think>x</think>b"),
            Cow::Owned(_)
        ));
        // Look-alikes are not tags.
        assert!(matches!(
            strip_reasoning("<think x>y</thinking>"),
            Cow::Borrowed("<think x>y</thinking>")
        ));
    }

    // --- non-English text and emoji: the clamp counts scalar values, not bytes ---

    #[test]
    fn keeps_non_english_titles() {
        assert_eq!(
            title("修复登录页面的重定向错误", PRODUCT_CLAMP),
            some("修复登录页面的重定向错误")
        );
        assert_eq!(
            title("「ログイン画面」の修正", PRODUCT_CLAMP),
            some("「ログイン画面」の修正")
        );
        assert_eq!(
            title("Исправить ошибку входа", PRODUCT_CLAMP),
            some("Исправить ошибку входа")
        );
    }

    #[test]
    fn clamps_non_ascii_by_scalar_values() {
        // 60 CJK chars (180 bytes) → 50 chars (150 bytes).
        let chinese = title(&"标题".repeat(30), PRODUCT_CLAMP).expect("a title");
        assert_eq!(chinese, "标题".repeat(25));
        assert_eq!(chinese.len(), 150);
        let japanese = title(&"かな".repeat(40), PRODUCT_CLAMP).expect("a title");
        assert_eq!(japanese, "かな".repeat(25));
        let cyrillic = title(&"я".repeat(70), PRODUCT_CLAMP).expect("a title");
        assert_eq!(cyrillic, "я".repeat(50));
        assert_eq!(cyrillic.len(), 100);
    }

    #[test]
    fn keeps_emoji() {
        assert_eq!(
            title("🚀 Launch pipeline", PRODUCT_CLAMP),
            some("🚀 Launch pipeline")
        );
        // A ZWJ family is 5 scalars; it stays whole when it fits.
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        assert_eq!(
            title(&format!("{family} family tree"), PRODUCT_CLAMP),
            Some(format!("{family} family tree"))
        );
    }

    #[test]
    fn the_clamp_may_split_a_multi_scalar_emoji() {
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        // 48 + 5 scalars; the clamp keeps the man and the first joiner.
        assert_eq!(
            title(&format!("{}{family}", "a".repeat(48)), PRODUCT_CLAMP),
            Some(format!("{}\u{1F468}\u{200D}", "a".repeat(48)))
        );
        // A flag is two regional indicators; the clamp keeps the first.
        let france = "\u{1F1EB}\u{1F1F7}";
        assert_eq!(
            title(&format!("{}{france}", "a".repeat(49)), PRODUCT_CLAMP),
            Some(format!("{}\u{1F1EB}", "a".repeat(49)))
        );
    }

    #[test]
    fn collapses_unicode_spaces() {
        assert_eq!(
            title(
                "Fix\u{a0}\u{a0}login\u{2003}bug\u{3000}now\u{202f}\u{205f}today",
                PRODUCT_CLAMP
            ),
            some("Fix login bug now today")
        );
        assert_eq!(
            title("\u{a0}\u{2009}Title\u{3000}\u{1680}", PRODUCT_CLAMP),
            some("Title")
        );
        // Line breaks other than \n and \r are whitespace, not line ends.
        assert_eq!(
            title("one\u{2028}two\u{85}three", PRODUCT_CLAMP),
            some("one two three")
        );
        // A zero-width space is not White_Space and stays.
        assert_eq!(title("a\u{200B}b", PRODUCT_CLAMP), some("a\u{200B}b"));
    }

    #[test]
    fn keeps_typographic_quotes() {
        assert_eq!(
            title("“Retry backoff” and ‘jitter’ «ok»", PRODUCT_CLAMP),
            some("“Retry backoff” and ‘jitter’ «ok»")
        );
    }

    fn raw_answer() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "(<think>|</think>|<THINK>|[a-zа-я标 \t\n\r\"'`\u{a0}\u{2003}\u{3000}\u{85}“”.])*",
        ]
    }

    proptest! {
        #[test]
        fn a_title_is_none_or_clean(raw in raw_answer(), max_chars in 0usize..80) {
            if let Some(title) = sanitize_title(&raw, max_chars) {
                prop_assert!(!title.is_empty());
                prop_assert_eq!(title.trim(), title.as_str());
                prop_assert!(!title.contains(['\n', '\r']));
                prop_assert!(!title.contains(ASCII_QUOTES));
                prop_assert!(title.chars().count() <= max_chars);
                // Whitespace is only ever single ASCII spaces.
                prop_assert!(!title.contains("  "));
                prop_assert!(title.chars().all(|ch| ch == ' ' || !ch.is_whitespace()));
            }
        }

        #[test]
        fn text_without_angle_brackets_has_no_reasoning(raw in "[^<]*") {
            prop_assert!(matches!(strip_reasoning(&raw), Cow::Borrowed(text) if text == raw));
        }
    }
}
