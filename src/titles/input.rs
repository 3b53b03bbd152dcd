//! What a title is made from (`titles.input`, docs/titles.md, docs/configuration.md): the first
//! user words (opencode's form), or the exchange: the first user words and the first answer's
//! text, each cut to `titles.input_chars`, as `USER:`/`ASSISTANT:` in one user message (the
//! seed's contract).
//!
//! The answer's half is this turn's answer: an exchange is titled on the turn that starts its
//! conversation, so no answer precedes it. The answer's witness (`answer_witness`) writes its text into
//! an `AnswerText` shared with the title job, which reads it when the job starts (`titles.order =
//! "after"`: once the answer's body has ended).

use super::sanitize::strip_reasoning;
pub use crate::memory::answer_witness::AnswerText;

/// The exchange input: each half trimmed, stripped of leaked `<think>` reasoning (the answer)
/// and cut to `chars` characters; a missing half is left out (its label too), and with neither
/// there is nothing to title from (`None`: no title request is sent).
pub fn exchange(user: &str, answer: &str, chars: usize) -> Option<String> {
    let user = clamp(user.trim(), chars);
    let answer = strip_reasoning(answer);
    let answer = clamp(answer.trim(), chars);
    match (user.is_empty(), answer.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("USER:\n{user}")),
        (true, false) => Some(format!("ASSISTANT:\n{answer}")),
        (false, false) => Some(format!("USER:\n{user}\n\nASSISTANT:\n{answer}")),
    }
}

/// The first `chars` characters of `text` (never cutting one in two).
fn clamp(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((end, _)) => text[..end].trim_end(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_are_one_text_user_first() {
        assert_eq!(
            exchange(" fix the login bug\n", "I fixed the redirect.", 100).as_deref(),
            Some("USER:\nfix the login bug\n\nASSISTANT:\nI fixed the redirect.")
        );
    }

    #[test]
    fn a_missing_half_is_left_out_and_the_other_still_asked() {
        assert_eq!(
            exchange("fix the login bug", "", 100).as_deref(),
            Some("USER:\nfix the login bug")
        );
        assert_eq!(
            exchange("  ", "Here is the plan.", 100).as_deref(),
            Some("ASSISTANT:\nHere is the plan.")
        );
    }

    #[test]
    fn no_input_at_all_is_none() {
        assert_eq!(exchange("", " \n", 100), None);
        assert_eq!(
            exchange("", "<think>only thoughts</think>", 100),
            None,
            "reasoning alone is no answer"
        );
    }

    #[test]
    fn each_half_is_cut_to_the_limit_in_characters() {
        let text = exchange("ééééé", "abcdefgh", 3).expect("input");
        assert_eq!(text, "USER:\nééé\n\nASSISTANT:\nabc");
    }

    #[test]
    fn the_answer_text_is_read_as_last_written() {
        let slot = AnswerText::default();
        assert_eq!(slot.get(), "");
        let writer = slot.clone();
        writer.set("partial");
        writer.set("partial and whole");
        assert_eq!(slot.get(), "partial and whole");
    }
}
