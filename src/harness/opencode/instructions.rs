//! Project instructions a client sends in its own forms, carried into opencode's system prompt
//! the way opencode itself carries a project's AGENTS.md: `Instructions from: <path>\n<text>`.
//!
//! Recognised forms: Codex's `# AGENTS.md instructions for <dir>` user block, Codex's
//! `<environment_context>` (kept verbatim: opencode has no such block), Claude Code's
//! project-memory `<system-reminder>` (`Contents of <path> (… instructions …):`), the
//! `Instructions from:` blocks of an opencode client's own system prompt, and a plain client's
//! system prompt (kept verbatim, last, as opencode places a caller's own system text; a known
//! agent's — Codex, Claude Code — is its persona, replaced by opencode's as in the reference).
//! Pure text work; which messages the history keeps is `history`'s business (Claude Code's
//! reminders and Codex's blocks are contextual there, so they never reach the user's words).

use crate::conversation::{Message, Role};

const AGENTS_OPEN: &str = "# AGENTS.md instructions for ";
const AGENTS_BODY_OPEN: &str = "<INSTRUCTIONS>";
const AGENTS_BODY_CLOSE: &str = "</INSTRUCTIONS>";
const ENVIRONMENT_OPEN: &str = "<environment_context>";
const ENVIRONMENT_CLOSE: &str = "</environment_context>";
const REMINDER_OPEN: &str = "<system-reminder>";
const REMINDER_CLOSE: &str = "</system-reminder>";
const MEMORY_HEADER: &str = "Contents of ";
/// Claude Code's context sections that may follow the memory files inside the reminder.
const MEMORY_ENDS: [&str; 2] = [
    "\n# currentDate\n",
    "\n\n      IMPORTANT: this context may or may not be relevant",
];
const OPENCODE_ENV: &str =
    "Here is some useful information about the environment you are running in:";
const OPENCODE_INSTRUCTIONS: &str = "Instructions from: ";
const AVAILABLE_SKILLS: &str = "<available_skills>";

/// What goes into the system prompt for one request.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Carried {
    /// Instruction blocks, in the order the client sent them; placed after `</env>`.
    pub blocks: Vec<String>,
    /// The client's own system prompt, placed last.
    pub client_system: Option<String>,
}

impl Carried {
    /// The text inserted after `</env>` (each block on its own line) and the text appended at
    /// the very end; both empty when nothing is carried.
    pub fn render(&self) -> (String, String) {
        let mut blocks = String::new();
        // opencode joins its system parts with a newline, and a file's text keeps its final
        // newline: `</env>\nInstructions from: P\n<text>\n\nSkills provide …` (opencode 1.18.33).
        for block in &self.blocks {
            blocks.push('\n');
            blocks.push_str(block.trim_end());
            blocks.push('\n');
        }
        let tail = self
            .client_system
            .as_ref()
            .map(|text| format!("\n{text}"))
            .unwrap_or_default();
        (blocks, tail)
    }
}

/// Collects the instructions of `messages`. `flavour_markers` are system texts that select a
/// flavour (the search-agent prompt, the task-agent marker): they are never carried; nor is any
/// other system text unless `client_system` (a known agent's system prompt is its own persona).
pub fn collect<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    flavour_markers: &[&str],
    client_system: bool,
) -> Carried {
    let keep_system = client_system;
    let mut carried = Carried::default();
    let mut system_texts: Vec<String> = Vec::new();
    for message in messages {
        match message.role {
            Role::User => {
                for part in message.content.text_parts() {
                    carried.blocks.extend(from_user_part(part));
                }
            }
            Role::System => {
                let text = message.content.text();
                let trimmed = text.trim_end();
                if trimmed.is_empty() || flavour_markers.iter().any(|m| m.trim_end() == trimmed) {
                    continue;
                }
                if trimmed.contains(OPENCODE_ENV) {
                    carried.blocks.extend(opencode_blocks(&text));
                } else if keep_system {
                    system_texts.push(trimmed.to_owned());
                }
            }
            _ => {}
        }
    }
    if !system_texts.is_empty() {
        carried.client_system = Some(system_texts.join("\n"));
    }
    carried
}

fn from_user_part(part: &str) -> Vec<String> {
    let trimmed = part.trim();
    if let Some(block) = agents_block(trimmed) {
        return vec![block];
    }
    if trimmed.starts_with(ENVIRONMENT_OPEN) && trimmed.ends_with(ENVIRONMENT_CLOSE) {
        return vec![trimmed.to_owned()];
    }
    project_memory(trimmed)
}

/// `# AGENTS.md instructions for <dir>\n\n<INSTRUCTIONS>\n<text>\n</INSTRUCTIONS>` →
/// `Instructions from: <dir>/AGENTS.md\n<text>`.
fn agents_block(trimmed: &str) -> Option<String> {
    let rest = trimmed.strip_prefix(AGENTS_OPEN)?;
    let (dir, body) = rest.split_once('\n')?;
    let body = body.trim_start().strip_prefix(AGENTS_BODY_OPEN)?;
    let body = body.strip_suffix(AGENTS_BODY_CLOSE)?;
    let text = body.strip_prefix('\n').unwrap_or(body);
    let text = text.strip_suffix('\n').unwrap_or(text);
    let dir = dir.trim().trim_end_matches('/');
    Some(format!("{OPENCODE_INSTRUCTIONS}{dir}/AGENTS.md\n{text}"))
}

/// Each `Contents of <path> (… instructions …):\n\n<text>` of a `<system-reminder>`.
fn project_memory(trimmed: &str) -> Vec<String> {
    let Some(body) = trimmed
        .strip_prefix(REMINDER_OPEN)
        .and_then(|rest| rest.strip_suffix(REMINDER_CLOSE))
    else {
        return Vec::new();
    };
    let headers: Vec<(usize, usize, &str)> = line_starts(body)
        .filter_map(|start| {
            let line = body[start..].lines().next()?;
            let rest = line.strip_prefix(MEMORY_HEADER)?.strip_suffix("):")?;
            let (path, kind) = rest.split_once(" (")?;
            kind.contains("instructions")
                .then_some((start, start + line.len(), path))
        })
        .collect();
    let end_of_memory = MEMORY_ENDS
        .iter()
        .filter_map(|end| body.find(end))
        .min()
        .unwrap_or(body.len());
    headers
        .iter()
        .enumerate()
        .map(|(i, &(_, text_start, path))| {
            let end = headers
                .get(i + 1)
                .map_or(end_of_memory, |next| next.0)
                .max(text_start);
            let text = body[text_start..end].trim_start_matches('\n').trim_end();
            format!("{OPENCODE_INSTRUCTIONS}{path}\n{text}")
        })
        .collect()
}

fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1))
}

/// The `Instructions from:` blocks of an opencode system prompt: after `</env>`, up to the
/// skills block (or the end).
fn opencode_blocks(text: &str) -> Vec<String> {
    let Some(env_end) = text.find(OPENCODE_ENV).and_then(|at| {
        text[at..]
            .find("</env>")
            .map(|end| at + end + "</env>".len())
    }) else {
        return Vec::new();
    };
    let rest = &text[env_end..];
    // The skills part is the paragraph that leads to `<available_skills>`, whatever its wording.
    let rest = rest
        .find(AVAILABLE_SKILLS)
        .and_then(|marker| rest[..marker].rfind("\n\n"))
        .map_or(rest, |blank| &rest[..blank]);
    let starts: Vec<usize> = line_starts(rest)
        .filter(|&at| rest[at..].starts_with(OPENCODE_INSTRUCTIONS))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let end = starts.get(i + 1).map_or(rest.len(), |&next| next);
            rest[at..end].trim_end().to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_agents_block() {
        assert_eq!(
            agents_block(
                "# AGENTS.md instructions for /home/u/p\n\n<INSTRUCTIONS>\nBe terse.\nUse tabs.\n</INSTRUCTIONS>"
            )
            .as_deref(),
            Some("Instructions from: /home/u/p/AGENTS.md\nBe terse.\nUse tabs.")
        );
        assert_eq!(
            agents_block("# AGENTS.md instructions for /x\nno body"),
            None
        );
    }

    #[test]
    fn claude_code_memory_sections() {
        let reminder = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase and user instructions are shown below.\n\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\n# Rules\nBe terse.\n\nContents of /home/u/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nNo emojis.\n# currentDate\nToday's date is 2026-11-30.\n\n      IMPORTANT: this context may or may not be relevant to your tasks.\n</system-reminder>";
        assert_eq!(
            project_memory(reminder),
            [
                "Instructions from: /p/CLAUDE.md\n# Rules\nBe terse.",
                "Instructions from: /home/u/.claude/CLAUDE.md\nNo emojis."
            ]
        );
        assert!(
            project_memory("<system-reminder>\nThe todo list is empty.\n</system-reminder>")
                .is_empty()
        );
    }

    #[test]
    fn opencode_system_blocks_before_skills() {
        let system = "PREFIX\n\nYou are powered by x\nHere is some useful information about the environment you are running in:\n<env>\n  Working directory: /p\n</env>\nInstructions from: /p/AGENTS.md\nA\n\nB\nInstructions from: /home/u/.config/opencode/AGENTS.md\nC\n\nSkills help.\n<available_skills>\n</available_skills>";
        assert_eq!(
            opencode_blocks(system),
            [
                "Instructions from: /p/AGENTS.md\nA\n\nB",
                "Instructions from: /home/u/.config/opencode/AGENTS.md\nC"
            ]
        );
    }
}
