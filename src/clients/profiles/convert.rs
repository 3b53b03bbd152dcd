//! One alias's argument conversion, both ways: the named converter, then the data tables
//! (`fields`, `scale`, `shift`, `defaults`). Pure.
//!
//! Owns: dispatching to the dialect files. Must not: pick the alias (`Profile` does).

use serde_json::{Map, Value};

use super::super::{claude_code, cline, codex, codex_responses, gemini_cli, pi};
use super::{Alias, Converter};

/// One client call's arguments → the harness tool's, by the alias's converter and tables.
pub(super) fn convert_to_harness(alias: &Alias, args: Map<String, Value>) -> Option<Value> {
    let args = units(args, alias, true);
    match alias.converter {
        Converter::Identity => Some(Value::Object(args)),
        Converter::Fields => Some(rename_fields(args, &alias.renames(true))),
        Converter::Only => Some(keep_fields(&args, &alias.renames(true))),
        Converter::CodexShell | Converter::CodexShellCommand => codex::shell_to_bash(&args),
        Converter::CodexUpdatePlan => codex::plan_to_todos(&args),
        Converter::CodexExecCommand => codex_responses::exec_to_bash(&args),
        Converter::ClaudeBash => claude_code::bash_to_opencode(&args),
        Converter::ClaudeTodoWrite => claude_code::todos_to_opencode(&args),
        Converter::ClaudeWebFetch => claude_code::webfetch_to_opencode(&args),
        Converter::LineRange => gemini_cli::lines_to_read(&args),
        Converter::GeminiTodos => gemini_cli::todos_to_opencode(&args),
        Converter::PromptFetch => gemini_cli::prompt_to_webfetch(&args),
        Converter::ClineCommands => cline::commands_to_bash(&args),
        Converter::ClineReadFiles => cline::files_to_read(&args),
        Converter::ClineSearch => cline::queries_to_grep(&args),
        Converter::ClineFetch => cline::requests_to_webfetch(&args),
        Converter::QwenTodos => gemini_cli::qwen_todos_to_opencode(&args),
        // Handled whole by `calls_to_opencode`.
        Converter::CodexApplyPatch | Converter::PiEdit | Converter::ClineEditor => None,
    }
}

/// A harness call's arguments → the client tool's, by the alias's converter and tables.
pub(super) fn convert_to_client(
    alias: &Alias,
    harness_tool: &str,
    args: Map<String, Value>,
) -> Option<Value> {
    let converted = match alias.converter {
        Converter::Identity => Value::Object(args),
        Converter::Fields => rename_fields(args, &alias.renames(false)),
        Converter::Only => keep_fields(&args, &alias.renames(false)),
        Converter::CodexShell => codex::bash_to_shell(&args)?,
        Converter::CodexShellCommand => codex::bash_to_shell_command(&args)?,
        Converter::CodexUpdatePlan => codex::todos_to_plan(&args)?,
        Converter::CodexExecCommand => codex_responses::bash_to_exec(&args)?,
        Converter::CodexApplyPatch => codex_responses::opencode_to_patch(harness_tool, &args)?,
        Converter::ClaudeBash => claude_code::bash_to_client(&args)?,
        Converter::ClaudeTodoWrite => claude_code::todos_to_client(&args)?,
        Converter::ClaudeWebFetch => claude_code::webfetch_to_client(&args)?,
        Converter::PiEdit => pi::edit_to_client(&args)?,
        Converter::LineRange => gemini_cli::read_to_lines(&args)?,
        Converter::GeminiTodos => gemini_cli::todos_to_client(&args)?,
        Converter::PromptFetch => gemini_cli::webfetch_to_prompt(&args)?,
        Converter::ClineCommands => cline::bash_to_commands(&args)?,
        Converter::ClineReadFiles => cline::read_to_files(&args)?,
        Converter::ClineEditor => cline::opencode_to_editor(harness_tool, &args)?,
        Converter::ClineSearch => cline::grep_to_queries(&args)?,
        Converter::ClineFetch => cline::webfetch_to_requests(&args)?,
        Converter::QwenTodos => gemini_cli::todos_to_qwen(&args)?,
    };
    let Value::Object(mut out) = converted else {
        return Some(converted);
    };
    for (field, value) in &alias.defaults {
        out.entry(field.clone()).or_insert_with(|| value.clone());
    }
    Some(Value::Object(units(out, alias, false)))
}

/// Numbers of the `scale` and `shift` fields (client names) put in the harness's units, or
/// back; a whole result stays an integer.
fn units(mut args: Map<String, Value>, alias: &Alias, to_harness: bool) -> Map<String, Value> {
    let fields = alias.scale.keys().chain(alias.shift.keys());
    let fields: std::collections::BTreeSet<&String> = fields.collect();
    for field in fields {
        let Some(number) = args.get(field.as_str()).and_then(Value::as_f64) else {
            continue;
        };
        let factor = alias.scale.get(field).copied().unwrap_or(1.0);
        let shift = alias.shift.get(field).copied().unwrap_or(0.0);
        let converted = if to_harness {
            number * factor + shift
        } else {
            (number - shift) / factor
        };
        #[allow(clippy::cast_possible_truncation)]
        let value = if converted.fract() == 0.0 && converted.abs() < 9.0e15 {
            Value::from(converted as i64)
        } else {
            serde_json::Number::from_f64(converted).map_or(Value::Null, Value::Number)
        };
        args.insert(field.clone(), value);
    }
    args
}

/// What opencode's bash answers for a command that printed nothing.
pub(super) fn plain_output(output: String) -> String {
    if output.is_empty() {
        "(no output)".to_owned()
    } else {
        output
    }
}

pub(super) fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Renames top-level fields by `renames` (from → to); others keep their names and order.
fn rename_fields(args: Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        let renamed = renames
            .iter()
            .find(|(from, _)| *from == key)
            .map_or(key, |(_, to)| (*to).to_owned());
        out.insert(renamed, value);
    }
    Value::Object(out)
}

/// The fields named in `renames` (from → to), renamed, in the order they came; others dropped.
fn keep_fields(args: &Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        if let Some((_, to)) = renames.iter().find(|(from, _)| from == key) {
            out.insert((*to).to_owned(), value.clone());
        }
    }
    Value::Object(out)
}
