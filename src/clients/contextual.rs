//! Recognises "contextual" user text (docs/wire.md §1 "History"): fragments the agent injects into
//! the user role (AGENTS.md instructions, environment context, hook prompts, …) rather than words
//! the user typed.
//!
//! Context is decided per part, never per message: an agent may send its context block and the
//! user's words as two parts of one message (Gemini CLI's `<session_context>` then the prompt),
//! and the words must still reach the model and the title. `user_words` and `is_context_only`
//! are the one reading of a user message every caller shares (the history, the `<env>` sources,
//! the title facts, the collaboration block's place). Image and audio parts never reach this
//! module, so they can never match.

/// Recognisers whose text must "wrap" between two markers: after trimming, it starts with
/// the first and ends with the second, both compared ASCII-case-insensitively.
const WRAPPING_MARKERS: [(&str, &str); 10] = [
    ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<cron-fire", "</cron-fire>"),
    ("<recommended_plugins>", "</recommended_plugins>"),
    // Claude Code's reminders (CLAUDE.md contents, date, todo state) sent as user text blocks.
    ("<system-reminder>", "</system-reminder>"),
    // Gemini CLI's first user part (date, OS, folder listing) before the user's words.
    ("<session_context>", "</session_context>"),
];

const ADDITIONAL_CONTEXT_OPEN: &str = "<external_";

const GOAL_CONTEXT_OPEN: &str = "<goal_context>";
const GOAL_CONTEXT_CLOSE: &str = "</goal_context>";
const INTERNAL_CONTEXT_OPEN: &str = "<codex_internal_context source=\"";
const INTERNAL_CONTEXT_OPEN_END: &str = "\">";
const INTERNAL_CONTEXT_CLOSE: &str = "</codex_internal_context>";

/// The setup turn of Gemini CLI's family (Qwen Code, older Gemini CLI) sent bare, without its
/// `<session_context>` tags: its opening sentence says what it is.
const SETUP_OPENINGS: [&str; 2] = [
    "This is the Qwen Code. We are setting up the context for our chat.",
    "This is the Gemini CLI. We are setting up the context for our chat.",
];

/// How each agent's compaction summary opens when it carries a compacted conversation into the
/// next request as user text (captured from the agents' own builds: Claude Code 2.1.332, Codex
/// 0.171, Gemini CLI 0.61's `<state_snapshot>`). A summary is the user's words as the agent
/// re-sends them, not what they asked: a title skips one in first place (`is_compaction_summary`).
const COMPACTION_OPENINGS: [&str; 3] = [
    "This session is being continued from a previous conversation that ran out of context.",
    "Another language model started to solve this problem and produced a summary of its thinking process.",
    "<state_snapshot>",
];

/// Warnings older agent versions injected as user text; a prefix is enough to recognise them.
const LEGACY_WARNING_PREFIXES: [&str; 2] = [
    "Warning: The maximum number of unified exec processes you can keep open is",
    "Warning: Your account was flagged for potentially high-risk cyber activity",
];
const APPLY_PATCH_WARNING_START: &str = "Warning: apply_patch was requested via ";
const APPLY_PATCH_WARNING_END: &str = "Use the apply_patch tool instead of exec_command.";

const HOOK_PROMPT_OPEN: &str = "<hook_prompt";
const HOOK_PROMPT_CLOSE: &str = "</hook_prompt>";
const HOOK_RUN_ID: &str = "hook_run_id";

/// Whether a user text is the setup turn of Gemini CLI's family (tagged or bare), which the agent
/// follows with a reply of its own that is context too.
pub fn is_setup_turn(text: &str) -> bool {
    let text = text.trim_start();
    let text = text
        .strip_prefix("<session_context>")
        .map_or(text, str::trim_start);
    SETUP_OPENINGS
        .iter()
        .any(|opening| text.starts_with(opening))
}

/// How Claude Code's note before an image it read for an `@file` mention opens (2.1.332,
/// captured: a reminder message of its own, then the image alone in the next user message).
const READ_NOTE_OPENING: &str = "Called the Read tool with the following input:";

/// The words of Claude Code's note naming the file of the image that follows (the reminder's
/// text without its tags), if `text` is one. Alone it is context; before the image it is what
/// says which file the image is.
pub fn image_note(text: &str) -> Option<&str> {
    let inner = text
        .trim()
        .strip_prefix("<system-reminder>")?
        .strip_suffix("</system-reminder>")?
        .trim();
    inner.starts_with(READ_NOTE_OPENING).then_some(inner)
}

/// Whether a user message is context and nothing else: at least one of its text parts is
/// contextual and every other text part is blank. A message with no text part (an image alone)
/// is the user's.
pub fn is_context_only<'a>(parts: impl IntoIterator<Item = &'a str>) -> bool {
    let mut any_context = false;
    for part in parts {
        if is_contextual_text(part) {
            any_context = true;
        } else if !part.trim().is_empty() {
            return false;
        }
    }
    any_context
}

/// What the user wrote in one user message: its text parts that are not context, concatenated
/// without separator (as a message's text always is); `None` when the message is context only.
#[must_use]
pub fn user_words(parts: &[&str]) -> Option<String> {
    if is_context_only(parts.iter().copied()) {
        return None;
    }
    Some(
        parts
            .iter()
            .filter(|part| !is_contextual_text(part))
            .copied()
            .collect(),
    )
}

/// What the user wrote in one user message's content: `None` when it is context only, images and
/// other parts counted as the user's (a screenshot beside a context block is still sent).
#[must_use]
pub fn words_of(content: &crate::conversation::Content) -> Option<String> {
    use crate::conversation::{Content, Part};
    match content {
        Content::Text(text) => (!is_contextual_text(text)).then(|| text.clone()),
        Content::Parts(parts) => {
            let texts = content.text_parts();
            let only_text = parts.iter().all(|part| matches!(part, Part::Text(_)));
            match user_words(&texts) {
                None if only_text => None,
                None => Some(String::new()),
                words => words,
            }
        }
    }
}

/// The contextual text parts of one user message (what feeds `<env>`, never the user's words).
pub fn context_parts<'a>(
    parts: impl IntoIterator<Item = &'a str>,
) -> impl Iterator<Item = &'a str> {
    parts.into_iter().filter(|part| is_contextual_text(part))
}

/// Whether one text part matches any of the recognisers above: the reference's twelve, plus
/// Claude Code's `<system-reminder>`.
#[must_use]
pub fn is_contextual_text(text: &str) -> bool {
    let trimmed = text.trim();
    WRAPPING_MARKERS
        .iter()
        .any(|(open, close)| wraps(trimmed, open, close))
        || is_additional_context(trimmed)
        || is_internal_model_context(trimmed)
        || is_legacy_warning(trimmed)
        || is_hook_prompt(trimmed)
        || SETUP_OPENINGS
            .iter()
            .any(|opening| trimmed.starts_with(opening))
}

/// Whether a user text is an agent's compaction summary (`COMPACTION_OPENINGS`).
#[must_use]
pub fn is_compaction_summary(text: &str) -> bool {
    let trimmed = text.trim_start();
    COMPACTION_OPENINGS
        .iter()
        .any(|opening| trimmed.starts_with(opening))
}

/// `trimmed` starts with `open` and ends with `close`, ignoring ASCII case. A marker pair with
/// an empty half never matches, so an unmarked fragment cannot claim arbitrary text.
fn wraps(trimmed: &str, open: &str, close: &str) -> bool {
    !open.is_empty()
        && !close.is_empty()
        && starts_with_ignore_ascii_case(trimmed, open)
        && ends_with_ignore_ascii_case(trimmed, close)
}

// Byte comparison is enough: the markers are ASCII, and an ASCII byte never equals a byte of a
// multi-byte character, so a window cutting a character in half simply does not match.
fn starts_with_ignore_ascii_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn ends_with_ignore_ascii_case(text: &str, suffix: &str) -> bool {
    text.len()
        .checked_sub(suffix.len())
        .and_then(|start| text.as_bytes().get(start..))
        .is_some_and(|tail| tail.eq_ignore_ascii_case(suffix.as_bytes()))
}

/// `<external_KEY>…</external_KEY>`, the key being everything up to the first `>`.
fn is_additional_context(trimmed: &str) -> bool {
    let Some(rest) = trimmed.strip_prefix(ADDITIONAL_CONTEXT_OPEN) else {
        return false;
    };
    let Some((key, body_and_close)) = rest.split_once('>') else {
        return false;
    };
    // Checking the text after the start tag keeps the closing tag from overlapping it.
    body_and_close.ends_with(&format!("</external_{key}>"))
}

/// The legacy `<goal_context>` wrapper, or `<codex_internal_context source="…">` with a
/// lowercase identifier as source.
fn is_internal_model_context(trimmed: &str) -> bool {
    if trimmed.starts_with(GOAL_CONTEXT_OPEN) && trimmed.ends_with(GOAL_CONTEXT_CLOSE) {
        return true;
    }
    let Some(rest) = trimmed.strip_prefix(INTERNAL_CONTEXT_OPEN) else {
        return false;
    };
    let Some((source, body_and_close)) = rest.split_once(INTERNAL_CONTEXT_OPEN_END) else {
        return false;
    };
    is_internal_context_source(source) && body_and_close.ends_with(INTERNAL_CONTEXT_CLOSE)
}

/// `[a-z][a-z0-9_]*`.
fn is_internal_context_source(source: &str) -> bool {
    let mut bytes = source.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_lowercase())
        && bytes.all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
}

fn is_legacy_warning(trimmed: &str) -> bool {
    LEGACY_WARNING_PREFIXES
        .iter()
        .any(|prefix| trimmed.starts_with(prefix))
        || (trimmed.starts_with(APPLY_PATCH_WARNING_START)
            && trimmed.ends_with(APPLY_PATCH_WARNING_END))
}

/// `<hook_prompt hook_run_id="…">text</hook_prompt>` with a non-blank `hook_run_id`.
///
/// The start tag is parsed like XML would (attributes separated by whitespace, values quoted
/// with `"` or `'`, a `>` inside a quoted value does not close the tag) so that the
/// `hook_run_id` found is really an attribute of this tag; the body is not validated.
fn is_hook_prompt(trimmed: &str) -> bool {
    let Some(attributes) = trimmed.strip_prefix(HOOK_PROMPT_OPEN) else {
        return false;
    };
    let Some((hook_run_id, body_and_close)) = parse_hook_prompt_attributes(attributes) else {
        return false;
    };
    !hook_run_id.trim().is_empty() && body_and_close.ends_with(HOOK_PROMPT_CLOSE)
}

/// Reads the attributes of a start tag whose element name has just been consumed, up to and
/// including the `>` that closes it. Returns the `hook_run_id` value and the text after the
/// tag; `None` when the tag is malformed, self-closing, or has no (or two) `hook_run_id`.
fn parse_hook_prompt_attributes(mut rest: &str) -> Option<(&str, &str)> {
    let mut hook_run_id = None;
    loop {
        let after_space = rest.trim_start_matches(is_xml_space);
        if let Some(after_tag) = after_space.strip_prefix('>') {
            return hook_run_id.map(|id| (id, after_tag));
        }
        // Without whitespace here the element name goes on (`<hook_promptx`) or two
        // attributes run together; neither is the tag we look for.
        if after_space.len() == rest.len() {
            return None;
        }
        let name_end = after_space
            .find(|c: char| is_xml_space(c) || matches!(c, '=' | '>' | '/' | '<' | '"' | '\''))?;
        let (name, after_name) = after_space.split_at(name_end);
        if name.is_empty() {
            return None;
        }
        let value_start = after_name
            .trim_start_matches(is_xml_space)
            .strip_prefix('=')?
            .trim_start_matches(is_xml_space);
        let quote = value_start
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\''))?;
        let (value, after_value) = value_start.strip_prefix(quote)?.split_once(quote)?;
        // `<` is not allowed in an XML attribute value.
        if value.contains('<') {
            return None;
        }
        if name == HOOK_RUN_ID {
            // A repeated attribute makes the document ill-formed.
            if hook_run_id.is_some() {
                return None;
            }
            hook_run_id = Some(value);
        }
        rest = after_value;
    }
}

fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

#[cfg(test)]
mod tests {
    use super::{context_parts, is_context_only, is_contextual_text, user_words, wraps};

    fn assert_contextual(text: &str) {
        assert!(is_contextual_text(text), "expected contextual: {text:?}");
    }

    fn assert_not_contextual(text: &str) {
        assert!(
            !is_contextual_text(text),
            "expected not contextual: {text:?}"
        );
    }

    #[test]
    fn plain_user_text_is_not_contextual() {
        assert_not_contextual("Run the QA pass\nthen report");
        assert_not_contextual("");
        assert_not_contextual("   \n\t");
    }

    // 1. AGENTS.md instructions

    #[test]
    fn agents_md_instructions_match() {
        assert_contextual(
            "# AGENTS.md instructions for /home/user/project\n\n\
             <INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>",
        );
    }

    #[test]
    fn agents_md_markers_ignore_ascii_case() {
        assert_contextual("# agents.MD Instructions for /x\n<instructions>\nx\n</instructions>");
    }

    #[test]
    fn agents_md_without_closing_marker_does_not_match() {
        assert_not_contextual("# AGENTS.md instructions for /x\n<INSTRUCTIONS>\nBe terse.");
    }

    #[test]
    fn agents_md_marker_not_at_the_start_does_not_match() {
        assert_not_contextual("Please read # AGENTS.md instructions </INSTRUCTIONS>");
    }

    // 2. environment context

    #[test]
    fn gemini_cli_s_session_context_matches() {
        assert_contextual(
            "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n</session_context>",
        );
    }

    #[test]
    fn environment_context_matches() {
        assert_contextual("<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>");
    }

    #[test]
    fn environment_context_markers_ignore_ascii_case() {
        assert_contextual("<ENVIRONMENT_CONTEXT><cwd>/tmp</cwd></Environment_Context>");
    }

    #[test]
    fn environment_context_without_closing_marker_does_not_match() {
        assert_not_contextual("<environment_context>\n  <cwd>/tmp</cwd>");
    }

    // 3. additional context

    #[test]
    fn additional_context_matches_with_the_same_key() {
        assert_contextual("<external_calendar>Standup at 10</external_calendar>");
    }

    #[test]
    fn additional_context_with_another_closing_key_does_not_match() {
        assert_not_contextual("<external_calendar>Standup at 10</external_mail>");
    }

    #[test]
    fn additional_context_is_case_sensitive() {
        assert_not_contextual("<External_calendar>Standup at 10</External_calendar>");
        assert_not_contextual("<external_calendar>Standup at 10</external_Calendar>");
    }

    #[test]
    fn additional_context_key_runs_to_the_first_angle_bracket() {
        // The key is `a id="1"`, so the closing tag would have to repeat it.
        assert_not_contextual("<external_a id=\"1\">x</external_a>");
        assert_contextual("<external_a id=\"1\">x</external_a id=\"1\">");
    }

    #[test]
    fn additional_context_without_start_tag_end_does_not_match() {
        assert_not_contextual("<external_calendar");
    }

    #[test]
    fn additional_context_with_an_empty_key_matches_as_written() {
        assert_contextual("<external_>x</external_>");
    }

    // 4. explicit skill prompt

    #[test]
    fn skill_matches_ignoring_ascii_case() {
        assert_contextual("<skill>\n<name>qa</name>\n</skill>");
        assert_contextual("<SKILL>\n<name>qa</name>\n</Skill>");
    }

    #[test]
    fn skill_without_closing_marker_does_not_match() {
        assert_not_contextual("<skill>\n<name>qa</name>");
    }

    // 5. user shell command

    #[test]
    fn user_shell_command_matches() {
        assert_contextual("<user_shell_command>\n<command>ls</command>\n</user_shell_command>");
    }

    #[test]
    fn user_shell_command_after_user_words_does_not_match() {
        assert_not_contextual("I ran <user_shell_command>ls</user_shell_command>");
    }

    // 6. turn aborted

    #[test]
    fn turn_aborted_matches() {
        assert_contextual("<turn_aborted>\nThe user interrupted.\n</turn_aborted>");
    }

    #[test]
    fn turn_aborted_without_closing_marker_does_not_match() {
        assert_not_contextual("<turn_aborted>\nThe user interrupted.");
    }

    // 7. sub-agent notification

    #[test]
    fn subagent_notification_matches() {
        assert_contextual("<subagent_notification>{\"status\":\"done\"}</subagent_notification>");
    }

    #[test]
    fn subagent_notification_with_trailing_user_words_does_not_match() {
        assert_not_contextual("<subagent_notification>done</subagent_notification> thanks");
    }

    // 8. internal model context

    #[test]
    fn goal_context_matches() {
        assert_contextual("<goal_context>Ship the release</goal_context>");
    }

    #[test]
    fn goal_context_is_case_sensitive() {
        assert_not_contextual("<GOAL_CONTEXT>Ship the release</GOAL_CONTEXT>");
    }

    #[test]
    fn internal_context_with_a_valid_source_matches() {
        assert_contextual(
            "<codex_internal_context source=\"goal\">\nKeep going.\n</codex_internal_context>",
        );
        assert_contextual("<codex_internal_context source=\"g0al_2\">x</codex_internal_context>");
    }

    #[test]
    fn internal_context_source_must_be_a_lowercase_identifier() {
        for source in ["Goal", "gOal", "2goal", "_goal", "goal-x", "goal x", ""] {
            assert_not_contextual(&format!(
                "<codex_internal_context source=\"{source}\">x</codex_internal_context>"
            ));
        }
    }

    #[test]
    fn internal_context_needs_its_exact_start_and_close() {
        assert_not_contextual("<codex_internal_context source=\"goal\">x");
        assert_not_contextual("<codex_internal_context source=\"goal\">x</CODEX_INTERNAL_CONTEXT>");
        assert_not_contextual(
            "<codex_internal_context  source=\"goal\">x</codex_internal_context>",
        );
        assert_not_contextual("<codex_internal_context source='goal'>x</codex_internal_context>");
    }

    // 9. kimi cron fire

    #[test]
    fn cron_fire_matches_with_attributes_and_any_case() {
        assert_contextual("<cron-fire id=\"daily\">tick</cron-fire>");
        assert_contextual("<CRON-FIRE id=\"daily\">tick</Cron-Fire>");
    }

    #[test]
    fn cron_fire_without_closing_marker_does_not_match() {
        assert_not_contextual("<cron-fire id=\"daily\">tick");
    }

    // 10. recommended plugins

    #[test]
    fn recommended_plugins_match() {
        assert_contextual("<recommended_plugins>\n- github\n</recommended_plugins>");
    }

    #[test]
    fn recommended_plugins_with_another_closing_marker_does_not_match() {
        assert_not_contextual("<recommended_plugins>\n- github\n</recommended_plugin>");
    }

    // 11. legacy warnings

    #[test]
    fn legacy_warnings_match_by_prefix() {
        assert_contextual(
            "Warning: The maximum number of unified exec processes you can keep open is 64.",
        );
        assert_contextual(
            "Warning: Your account was flagged for potentially high-risk cyber activity; see docs.",
        );
        assert_contextual(
            "Warning: apply_patch was requested via exec_command. \
             Use the apply_patch tool instead of exec_command.",
        );
    }

    #[test]
    fn legacy_warnings_are_case_sensitive() {
        assert_not_contextual(
            "warning: the maximum number of unified exec processes you can keep open is 64.",
        );
    }

    #[test]
    fn apply_patch_warning_needs_its_closing_sentence() {
        assert_not_contextual("Warning: apply_patch was requested via exec_command.");
    }

    // 12. hook prompt

    #[test]
    fn hook_prompt_matches() {
        assert_contextual(
            "<hook_prompt hook_run_id=\"stop:0:/home/u/hooks.json\">Keep going.</hook_prompt>",
        );
    }

    #[test]
    fn hook_prompt_accepts_other_attributes_single_quotes_and_a_quoted_angle_bracket() {
        assert_contextual("<hook_prompt\n  event=\"stop\"\n  hook_run_id='r1'>go</hook_prompt>");
        assert_contextual("<hook_prompt hook_run_id = \"a>b\">go</hook_prompt>");
        assert_contextual("<hook_prompt hook_run_id=\"r1\"></hook_prompt>");
    }

    #[test]
    fn hook_prompt_with_a_blank_or_missing_run_id_does_not_match() {
        assert_not_contextual("<hook_prompt hook_run_id=\"  \">go</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"\">go</hook_prompt>");
        assert_not_contextual("<hook_prompt>go</hook_prompt>");
        assert_not_contextual("<hook_prompt event=\"stop\">go</hook_prompt>");
        assert_not_contextual("<hook_prompt xhook_run_id=\"r1\">go</hook_prompt>");
    }

    #[test]
    fn hook_prompt_with_a_malformed_start_tag_does_not_match() {
        assert_not_contextual("<hook_promptx hook_run_id=\"r1\">go</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"r1\"</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"r1\"/></hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=r1>go</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"r1\"event=\"x\">go</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"a\" hook_run_id=\"b\">go</hook_prompt>");
        assert_not_contextual("<hook_prompt hook_run_id=\"a<b\">go</hook_prompt>");
    }

    #[test]
    fn hook_prompt_needs_its_closing_tag_and_exact_case() {
        assert_not_contextual("<hook_prompt hook_run_id=\"r1\">go");
        assert_not_contextual("<HOOK_PROMPT hook_run_id=\"r1\">go</HOOK_PROMPT>");
    }

    // Shared rules

    #[test]
    fn surrounding_whitespace_is_ignored_by_every_kind_of_rule() {
        assert_contextual("\n  <environment_context>x</environment_context>\n\n");
        assert_contextual(" \t<external_k>v</external_k>\r\n");
        assert_contextual("\n<codex_internal_context source=\"goal\">x</codex_internal_context> ");
        assert_contextual(
            "  Warning: Your account was flagged for potentially high-risk cyber activity",
        );
        assert_contextual("\n\n<hook_prompt hook_run_id=\"r1\">go</hook_prompt>\n");
    }

    #[test]
    fn a_marker_pair_with_an_empty_half_never_matches() {
        assert!(!wraps("anything</x>", "", "</x>"));
        assert!(!wraps("<x>anything", "<x>", ""));
        assert!(!wraps("", "", ""));
        assert!(wraps("<x>anything</x>", "<x>", "</x>"));
    }

    #[test]
    fn a_marker_window_cutting_a_character_does_not_match_or_panic() {
        assert_not_contextual("é<skill>x</skill");
        assert_not_contextual("<skill>x</skill>é");
        assert_not_contextual("日本");
    }

    /// Gemini CLI 0.61 sends its `<session_context>` block and the typed prompt as two parts of
    /// one user message: the block is context, the prompt is the user's.
    /// Qwen Code 0.15.10's setup turn (captured 2026-12-02): context, not the user's words; its
    /// working directory line feeds `<env>` like Gemini CLI's block.
    #[test]
    fn qwen_code_s_setup_turn_is_context() {
        assert!(is_contextual_text(
            "This is the Qwen Code. We are setting up the context for our chat.\nToday's date is Wednesday, December 2, 2026 (formatted according to the user's locale).\nMy operating system is: linux\nI'm currently working in the directory: /w"
        ));
        assert!(!is_contextual_text(
            "This is the Qwen Code repository; fix its build."
        ));
    }

    #[test]
    fn context_is_decided_per_part_never_per_message() {
        let gemini = [
            "<session_context>\nThis is the Gemini CLI. Today's date is Tuesday.\n</session_context>",
            "list the files here",
        ];
        assert!(!is_context_only(gemini));
        assert_eq!(user_words(&gemini).as_deref(), Some("list the files here"));
        assert_eq!(context_parts(gemini).count(), 1);

        let reminder_only = ["<system-reminder>x</system-reminder>", "  \n"];
        assert!(is_context_only(reminder_only));
        assert_eq!(user_words(&reminder_only), None);

        assert!(!is_context_only(["hello", "world"]));
        assert_eq!(
            user_words(&["hello", " world"]).as_deref(),
            Some("hello world")
        );
        // No text at all (an image alone) is the user's, with no words.
        assert!(!is_context_only(std::iter::empty::<&str>()));
        assert_eq!(user_words(&[]).as_deref(), Some(""));
    }
}
