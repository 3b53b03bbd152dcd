//! Named converters: the structural conversions a rename table cannot say (one call ↔ several,
//! a list ↔ one value, a patch ↔ an edit), registered by name and named by profile files
//! (`converter = "codex_shell"`). Each is a pair of plain functions (`converter::Named`), client
//! arguments → neutral calls and a neutral call → client arguments, written in the dialect's own
//! module; this table only lists them, so a new structural converter is one function pair in its
//! agent's module and one line here. Result readers (a structured result text → the neutral
//! words) and sub-agent collectors (`clients::subagent`) are listed the same way.
//!
//! Owns: the registry. Must not: convert anything itself, or be imported by what it lists (the
//! shapes they share are `converter`'s).

use super::converter::{FromNeutral, Named, ResultReader, ToNeutral};
use super::subagent::{Collector, Markers};
use super::{
    claude_code, cline, codex, codex_agents, codex_code_mode, codex_responses, gemini_cli, kimi,
    pi, profiles,
};

const fn named(name: &'static str, to_neutral: ToNeutral, from_neutral: FromNeutral) -> Named {
    Named {
        name,
        to_neutral,
        from_neutral,
    }
}

/// Every named converter, by the module of the agent whose tool it converts.
static REGISTRY: [Named; 21] = [
    named(
        "codex_shell",
        codex::shell_to_neutral,
        codex::neutral_to_shell,
    ),
    named(
        "codex_shell_command",
        codex::shell_to_neutral,
        codex::neutral_to_shell_command,
    ),
    named(
        "codex_update_plan",
        codex::plan_to_neutral,
        codex::neutral_to_plan,
    ),
    named(
        "codex_exec_command",
        codex_responses::exec_to_neutral,
        codex_responses::neutral_to_exec,
    ),
    named(
        "codex_apply_patch",
        codex_responses::patch_to_neutral,
        codex_responses::neutral_to_patch,
    ),
    named(
        "codex_script",
        codex_code_mode::script_to_neutral,
        codex_code_mode::neutral_to_script,
    ),
    named(
        "claude_bash",
        claude_code::bash_to_neutral,
        claude_code::neutral_to_bash,
    ),
    named(
        "claude_todo_write",
        claude_code::todos_to_neutral,
        claude_code::neutral_to_todos,
    ),
    named(
        "claude_web_fetch",
        claude_code::webfetch_to_neutral,
        claude_code::neutral_to_webfetch,
    ),
    named("pi_edit", pi::edit_to_neutral, pi::neutral_to_edit),
    named(
        "line_range",
        gemini_cli::lines_to_neutral,
        gemini_cli::neutral_to_lines,
    ),
    named(
        "gemini_todos",
        gemini_cli::todos_to_neutral,
        gemini_cli::neutral_to_todos,
    ),
    named(
        "prompt_fetch",
        gemini_cli::prompt_to_neutral,
        gemini_cli::neutral_to_prompt,
    ),
    named(
        "qwen_todos",
        gemini_cli::qwen_todos_to_neutral,
        gemini_cli::neutral_to_qwen_todos,
    ),
    named(
        "cline_commands",
        cline::commands_to_neutral,
        cline::neutral_to_commands,
    ),
    named(
        "cline_read_files",
        cline::files_to_neutral,
        cline::neutral_to_files,
    ),
    named(
        "cline_editor",
        cline::editor_to_neutral,
        cline::neutral_to_editor,
    ),
    named(
        "cline_search",
        cline::queries_to_neutral,
        cline::neutral_to_queries,
    ),
    named(
        "cline_fetch",
        cline::requests_to_neutral,
        cline::neutral_to_requests,
    ),
    named(
        "kimi_todos",
        kimi::titled_todos_to_neutral,
        kimi::neutral_to_titled_todos,
    ),
    named(
        "kimi_str_replace",
        kimi::str_replace_to_neutral,
        kimi::neutral_to_str_replace,
    ),
];

/// Every result reader (`output = "…"` in a profile file).
static READERS: [(&str, ResultReader); 8] = [
    ("shell_block", profiles::shell_block),
    ("kimi_system", profiles::kimi_system),
    ("cline_results", profiles::cline_results),
    ("codex_exec", codex_responses::exec_output),
    ("codex_patch", codex_responses::patch_output),
    ("codex_script", codex_code_mode::script_output),
    ("claude_agent_report", claude_code::agent_report),
    ("gemini_agent_result", gemini_cli::agent_result),
];

/// Every sub-agent collector (`collect = "…"` in a profile's `[subagent]`).
static COLLECTORS: [Collector; 1] = [Collector {
    name: "codex_wait_agent",
    pending: codex_agents::pending_wait,
    fold: codex_agents::fold,
}];

/// The sub-agent collector of that name.
pub fn collector(name: &str) -> Option<&'static Collector> {
    COLLECTORS.iter().find(|c| c.name == name)
}

/// The collector an agent's sub-agents need (its profile's `[subagent] collect`), if any (its
/// name was checked at load).
pub fn collector_of(markers: &Markers) -> Option<&'static Collector> {
    markers.collect.as_deref().and_then(collector)
}

/// The converter of that name.
pub fn lookup(name: &str) -> Option<&'static Named> {
    REGISTRY.iter().find(|c| c.name == name)
}

/// The result reader of that name.
pub fn reader(name: &str) -> Option<ResultReader> {
    READERS.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// Every name a profile file may give `converter`, for its error message.
pub fn names() -> String {
    let mut names = vec!["identity", "fields", "only"];
    names.extend(REGISTRY.iter().map(|c| c.name));
    names.join(", ")
}

/// Every name a profile file may give `output`.
pub fn reader_names() -> String {
    READERS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, converter) in REGISTRY.iter().enumerate() {
            assert!(
                REGISTRY[..i].iter().all(|c| c.name != converter.name),
                "{} twice",
                converter.name
            );
            assert!(lookup(converter.name).is_some());
        }
        assert!(lookup("nope").is_none());
        assert!(reader("shell_block").is_some());
    }
}
