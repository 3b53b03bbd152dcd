//! Agents' tool result texts as the harness's tools word them (opencode's: `(no output)`,
//! `Wrote file successfully.`, `Edit applied successfully.`; docs/wire.md §3): a profile's
//! `[[result]]` rules for fixed texts, and the readers of structured ones.
//!
//! Owns: result texts. Must not: know which agent a rule belongs to (the profile's data says).

use serde::Deserialize;

/// One fixed result text of one client tool, and what the harness's tool says instead.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRule {
    /// The client's tool name.
    pub tool: String,
    /// The whole result, when it is exactly this.
    #[serde(default)]
    pub equals: Option<String>,
    /// The result's start (a path and a note follow).
    #[serde(default)]
    pub starts_with: Option<String>,
    /// What the harness's tool returns in its place.
    pub text: String,
}

impl ResultRule {
    fn applies(&self, tool: &str, result: &str) -> bool {
        let result = result.trim_end();
        self.tool == tool
            && (self.equals.as_deref() == Some(result)
                || self
                    .starts_with
                    .as_deref()
                    .is_some_and(|p| result.starts_with(p)))
    }
}

/// The harness's words for `result` of `tool`, by the first rule that applies. Context the
/// agent appended for the model (Claude Code's `<system-reminder>` blocks) is kept after them.
pub fn reword(rules: &[ResultRule], tool: &str, result: &str) -> Option<String> {
    // Most tools have no rule: their results (whole files, long logs) are not searched at all.
    if !rules.iter().any(|r| r.tool == tool) {
        return None;
    }
    let (head, reminders) = split_reminders(result);
    let rule = rules.iter().find(|r| r.applies(tool, head))?;
    Some(match reminders {
        "" => rule.text.clone(),
        reminders => format!("{}\n\n{reminders}", rule.text),
    })
}

/// A result and the `<system-reminder>` blocks that end it (Claude Code appends its token budget
/// to a Bash result when it talks to a Claude model).
fn split_reminders(result: &str) -> (&str, &str) {
    const OPEN: &str = "<system-reminder>";
    // The end is looked at first: a result that does not end with a block is not searched.
    if !result.trim_end().ends_with("</system-reminder>") {
        return (result, "");
    }
    match result.find(OPEN) {
        Some(at) if at > 0 => (result[..at].trim_end(), result[at..].trim_end()),
        _ => (result, ""),
    }
}

/// Gemini CLI's and Qwen Code's shell result block:
/// `Command: …\nDirectory: …\nOutput: …\nError: …\nExit Code: …\nSignal: …\nProcess Group PGID: …`
/// → the output (and the error, when there is one), `(no output)` when both are empty; a text
/// of another form is not read.
///
/// Gemini CLI 0.61 wraps a shorter block (`Output: …`, `Process Group PGID: …`) in
/// `<untrusted_context>`; that form is read too.
pub fn shell_block(text: &str) -> Option<String> {
    let text = text
        .strip_prefix("<untrusted_context>\n")
        .and_then(|t| t.trim_end().strip_suffix("</untrusted_context>"))
        .unwrap_or(text);
    let after = if let Some(after) = text.strip_prefix("Output: ") {
        after
    } else if text.starts_with("Command: ") {
        text.split_once("\nOutput: ")?.1
    } else {
        return None;
    };
    let end = [
        "\nError: ",
        "\nExit Code: ",
        "\nSignal: ",
        "\nProcess Group PGID: ",
    ]
    .iter()
    .filter_map(|m| after.find(m))
    .min()
    .unwrap_or(after.len());
    let output = after[..end].trim_end_matches('\n');
    let error = after[end..]
        .strip_prefix("\nError: ")
        .map(|e| e.split("\nExit Code: ").next().unwrap_or(e));
    let mut out = String::new();
    if output != "(empty)" {
        out.push_str(output);
    }
    if let Some(error) = error.filter(|e| *e != "(none)" && !e.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(error);
    }
    Some(super::plain_output(out))
}

/// Kimi CLI's results: the output, with the tool's message to the model in `<system>` tags
/// (`<system>Command executed successfully.</system>`, `<system>File successfully overwritten.
/// Current size: 12 bytes.</system>`). The output alone when there is one, else the message
/// without its tags (for the profile's `[[result]]` rules to reword); a text with no such tag is
/// not read.
pub fn kimi_system(text: &str) -> Option<String> {
    const OPEN: &str = "<system>";
    const CLOSE: &str = "</system>";
    let start = text.find(OPEN)?;
    let end = start + text[start..].find(CLOSE)?;
    let message = text[start + OPEN.len()..end].trim();
    let output = format!("{}{}", &text[..start], &text[end + CLOSE.len()..]);
    let output = output.trim_matches('\n');
    Some(if output.trim().is_empty() {
        message.to_owned()
    } else {
        output.to_owned()
    })
}

/// Cline's results, a JSON list of `{query, result, success}` (or one such object): the result
/// texts, one per line, `(no output)` when all are empty. Another text is not read.
pub fn cline_results(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let entries = match &value {
        serde_json::Value::Array(entries) => entries.iter().collect::<Vec<_>>(),
        serde_json::Value::Object(_) => vec![&value],
        _ => return None,
    };
    let results: Vec<&str> = entries
        .iter()
        .map(|e| e.get("result").and_then(serde_json::Value::as_str))
        .collect::<Option<_>>()?;
    let joined: Vec<&str> = results.into_iter().filter(|r| !r.is_empty()).collect();
    Some(super::plain_output(joined.join("\n")))
}

/// Codex's text form of a command result (`shell_command`): header lines such as
/// `Exit code: 0` and `Wall time: 0.3 seconds`, then `Output:` and the output itself.
pub(super) fn text_output(text: &str) -> Option<&str> {
    let mut rest = text.strip_prefix("Exit code: ")?;
    loop {
        let (line, after) = rest.split_once('\n')?;
        if line == "Output:" {
            return Some(after);
        }
        let known = ["Exit code: ", "Wall time: ", "Total output lines: "]
            .iter()
            .any(|l| line.starts_with(l))
            || line.bytes().all(|b| b.is_ascii_digit());
        if !known {
            return None;
        }
        rest = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qwen_shell_block_is_its_output_alone() {
        let empty = "Command: echo hi > a.txt\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: 0\nBackground PIDs: (none)\nProcess Group PGID: 4242";
        assert_eq!(shell_block(empty).as_deref(), Some("(no output)"));
        let listed = "Command: ls\nDirectory: (root)\nOutput: a.txt\nb.txt\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 7";
        assert_eq!(shell_block(listed).as_deref(), Some("a.txt\nb.txt"));
        let failed = "Command: false\nDirectory: (root)\nOutput: (empty)\nError: boom\nExit Code: 1\nSignal: 0";
        assert_eq!(shell_block(failed).as_deref(), Some("boom"));
        assert_eq!(shell_block("a.txt"), None);
        let gemini =
            "<untrusted_context>\nOutput: (empty)\nProcess Group PGID: 16416\n</untrusted_context>";
        assert_eq!(shell_block(gemini).as_deref(), Some("(no output)"));
    }

    #[test]
    fn a_reminder_after_a_fixed_result_is_kept_after_the_harness_s_words() {
        let rules = [ResultRule {
            tool: "Bash".into(),
            equals: Some("(Bash completed with no output)".into()),
            starts_with: None,
            text: "(no output)".into(),
        }];
        let reminder = "<system-reminder>\n<total_tokens>14997672 tokens left</total_tokens>\n</system-reminder>";
        let result = format!("(Bash completed with no output)\n\n{reminder}\n");
        assert_eq!(
            reword(&rules, "Bash", &result),
            Some(format!("(no output)\n\n{reminder}"))
        );
        assert_eq!(
            reword(&rules, "Bash", reminder),
            None,
            "a reminder alone is no result"
        );
    }

    #[test]
    fn kimi_cli_results_are_their_output_else_their_message() {
        assert_eq!(
            kimi_system("<system>Command executed successfully.</system>").as_deref(),
            Some("Command executed successfully.")
        );
        assert_eq!(
            kimi_system("hi\n<system>Command executed successfully.</system>").as_deref(),
            Some("hi")
        );
        assert_eq!(
            kimi_system("<system>File successfully overwritten. Current size: 6 bytes.</system>")
                .as_deref(),
            Some("File successfully overwritten. Current size: 6 bytes.")
        );
        assert_eq!(kimi_system("plain"), None);
    }

    #[test]
    fn cline_results_are_their_result_texts() {
        let ran = r#"[{"query":"echo hi > made_by_cline.txt","result":"","success":true}]"#;
        assert_eq!(cline_results(ran).as_deref(), Some("(no output)"));
        let edited = r#"{"query":"edit:/abs/w.txt","result":"File created successfully at: /abs/w.txt","success":true}"#;
        assert_eq!(
            cline_results(edited).as_deref(),
            Some("File created successfully at: /abs/w.txt")
        );
        assert_eq!(cline_results("plain"), None);
    }
}
