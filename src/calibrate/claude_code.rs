//! `calibrate claude-code`: the capture endpoint answers what a real Claude Code sends (its
//! `HEAD` preflight, `POST /v1/messages?beta=true` with a short canned Messages answer,
//! `count_tokens`), and its main request becomes the `claude-code` harness's files: the SDK line
//! (`sdk.md`), the prompt split as the harness joins it (`system.md`, `guidance.md`,
//! `environment.md`, each with the harness's placeholders where this run's values stood), the
//! tools as captured, in the captured order (`tools.json`), and, when a title request came,
//! `title.md`. Then `check`: the harness, given those files, must send the captured SDK line,
//! prompt and tools again.
//!
//! The first system block is Claude Code's billing line: it is never written anywhere (a
//! captured text holding it stops the calibration before anything is written).

use std::path::Path;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::header;
use serde_json::{Value, json};

use super::agents::{AgentError, AgentFiles};
use super::extract::Capture;
use crate::harness::opencode::tools::HostInfo;

/// How Claude Code's billing line (its first system block) begins.
pub const BILLING: &str = "x-anthropic-billing-header";
/// The headings the harness's prompt parts begin with (`harness::claude_code`: the system part,
/// the guidance and the environment, joined by a blank line).
const GUIDANCE: &str = "\n\n# Session-specific guidance\n";
const ENVIRONMENT: &str = "\n\n# Environment\n";
/// The line of the system part that names the shell tool (`{{shell_tool}}` in `system.md`).
const SHELL_LINE: &str = "Prefer dedicated tools over ";
/// The environment's client facts, by label, and the harness's placeholder for each.
const FACTS: [(&str, &str); 5] = [
    ("- Primary working directory: ", "cwd"),
    ("- Is a git repository: ", "git"),
    ("- Platform: ", "platform"),
    ("- Shell: ", "shell"),
    ("- OS Version: ", "os_version"),
];
const MODEL_NAME: &str = "the model named ";
const MODEL_ID: &str = "model ID is ";

/// How to point Claude Code at the capture endpoint.
pub fn how_to_point(base: &str) -> String {
    format!(
        "  run `ANTHROPIC_BASE_URL={base} ANTHROPIC_API_KEY=x DISABLE_AUTOUPDATER=1 claude -p \"say hi\"` in an empty\n  directory, HOME an empty directory too (your settings, CLAUDE.md and memory stay out of the capture);\n  stops once Claude Code sent its main request (or on Ctrl-C)"
    )
}

/// The system texts but the billing line: the SDK line and the prompt (or the title prompt).
pub(super) fn blocks(body: &Value) -> Option<[&str; 2]> {
    let texts: Vec<&str> = body["system"]
        .as_array()?
        .iter()
        .filter_map(|block| block["text"].as_str())
        .filter(|text| !text.trim_start().starts_with(BILLING))
        .collect();
    match texts[..] {
        [sdk, prompt] => Some([sdk, prompt]),
        _ => None,
    }
}

/// Claude Code's main request: its tools, and the SDK line and prompt after the billing line.
pub fn is_main(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty()) && blocks(body).is_some()
}

/// Claude Code's title request: no tools, a JSON-schema answer, its title prompt third.
pub fn is_title(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(Vec::is_empty)
        && body.pointer("/output_config/format").is_some()
        && blocks(body).is_some()
}

/// The capture is complete with the main request (`-p` sends no title request; a title request
/// that came before it is written too).
pub fn done(captures: &[Capture]) -> bool {
    captures.iter().any(|c| is_main(&c.body))
}

/// A complete, short answer in the shape asked for: a title request gets a title object.
pub fn canned(model: &str, title: bool, stream: bool) -> Response {
    let text = if title {
        r#"{"title":"Calibration run"}"#
    } else {
        "Hi."
    };
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    if !stream {
        return Json(
            json!({"id": "msg_calibrate", "type": "message", "role": "assistant",
            "model": model, "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage}),
        )
        .into_response();
    }
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_calibrate", "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": usage}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// `count_tokens`: a rough count (a token per four bytes), enough for Claude Code to go on.
pub fn count_tokens(size: usize) -> Response {
    Json(json!({"input_tokens": size.div_ceil(4)})).into_response()
}

/// `{{` and `}}` as the template syntax writes them literally.
fn escape(text: &str) -> String {
    text.replace("{{", "{{{{").replace("}}", "}}}}")
}

/// The harness's files from Claude Code's main request (and its title request, when captured).
pub fn extract(captures: &[Capture]) -> Result<AgentFiles, AgentError> {
    let main = captures
        .iter()
        .map(|c| &c.body)
        .find(|body| is_main(body))
        .ok_or(AgentError::NoMainRequest(
            "Claude Code",
            "system blocks after the billing line: the SDK line and the prompt",
        ))?;
    let [sdk, prompt] = blocks(main).ok_or(AgentError::BadTools)?;
    let mut notes = Vec::new();
    let (system, guidance, environment) = split(prompt, &mut notes)?;
    let mut files = vec![
        ("sdk.md", format!("{}\n", escape(sdk))),
        ("system.md", system_file(system, main, &mut notes)),
        ("guidance.md", format!("{}\n", escape(guidance))),
        ("environment.md", environment_file(environment, &mut notes)),
        ("tools.json", tools_file(main, &mut notes)?),
    ];
    match captures.iter().map(|c| &c.body).find(|b| is_title(b)) {
        Some(title) => {
            let [_, text] = blocks(title).ok_or(AgentError::BadTools)?;
            files.push(("title.md", format!("{}\n", escape(text))));
        }
        None => notes.push(
            "no title request was captured (`-p` sends none): title.md is not written, the built-in stays"
                .to_owned(),
        ),
    }
    if files.iter().any(|(_, text)| text.contains(BILLING)) {
        return Err(AgentError::BillingLine);
    }
    local_paths(main, &files, &mut notes);
    Ok(AgentFiles { files, notes })
}

/// The prompt as the harness joins it: the system part, `# Session-specific guidance` up to
/// `# Environment`, the environment to the end. Without the guidance heading the last section
/// before the environment is taken as guidance (the harness always has one).
fn split<'a>(
    prompt: &'a str,
    notes: &mut Vec<String>,
) -> Result<(&'a str, &'a str, &'a str), AgentError> {
    let environment = prompt
        .find(ENVIRONMENT)
        .ok_or(AgentError::NoSection("# Environment"))?;
    let before = &prompt[..environment];
    let guidance = match before.find(GUIDANCE) {
        Some(at) => at,
        None => {
            notes.push("no `# Session-specific guidance` section: guidance.md holds the last section before `# Environment`".to_owned());
            before
                .rfind("\n\n# ")
                .ok_or(AgentError::NoSection("# Session-specific guidance"))?
        }
    };
    Ok((
        &prompt[..guidance],
        &prompt[guidance + 2..environment],
        &prompt[environment + 2..],
    ))
}

/// The system part, the shell tool's name in the line that names it back into `{{shell_tool}}`.
fn system_file(system: &str, main: &Value, notes: &mut Vec<String>) -> String {
    let offers = |name: &str| {
        main["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == name))
    };
    let shell = if offers("Bash") { "Bash" } else { "PowerShell" };
    let mut found = false;
    let lines: Vec<String> = escape(system)
        .split('\n')
        .map(|line| {
            if line.contains(SHELL_LINE) && line.contains(shell) {
                found = true;
                replace_word(line, shell, "{{shell_tool}}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    if !found {
        notes.push(format!(
            "no line `{SHELL_LINE}{shell}`: system.md has no {{{{shell_tool}}}}, it names {shell} whatever the client's shell tool"
        ));
    }
    format!("{}\n", lines.join("\n"))
}

/// `word` replaced where it stands alone (not inside a longer name such as `BashOutput`).
fn replace_word(line: &str, word: &str, by: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(word) {
        let after = &rest[at + word.len()..];
        let before_ok = !rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after_ok = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if before_ok && after_ok { by } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The environment section, this run's facts back into the harness's placeholders; the ones
/// not found are said (a Claude Code that states them elsewhere: the harness then states none).
fn environment_file(environment: &str, notes: &mut Vec<String>) -> String {
    let mut missing: Vec<&str> = Vec::new();
    let mut text = escape(environment);
    for (label, hole) in FACTS {
        match hole_after(&text, label, &["\n"], hole) {
            Some(filled) => text = filled,
            None => missing.push(hole),
        }
    }
    for (label, hole) in [(MODEL_NAME, "model_name"), (MODEL_ID, "model_id")] {
        match hole_after(&text, label, &[". ", ".\n", "\n"], hole) {
            Some(filled) => text = filled,
            None => missing.push(hole),
        }
    }
    if !missing.is_empty() {
        let holes: Vec<String> = missing.iter().map(|h| format!("{{{{{h}}}}}")).collect();
        notes.push(format!(
            "the environment section names no {}: environment.md holds none of them, so the harness states none (this Claude Code states them in reminders of its first turn, which the harness does not send)",
            holes.join(", ")
        ));
    }
    format!("{text}\n")
}

/// The value after `label` up to the first of `ends` (or the end), replaced by `{{hole}}`; a
/// value ending in a full stop at the end of the text keeps the stop out.
fn hole_after(text: &str, label: &str, ends: &[&str], hole: &str) -> Option<String> {
    let start = text.find(label)? + label.len();
    let rest = &text[start..];
    let mut stop = ends
        .iter()
        .filter_map(|end| rest.find(end))
        .min()
        .unwrap_or(rest.len());
    if ends.len() > 1 && rest[..stop].ends_with('.') && stop == rest.len() {
        stop -= 1;
    }
    Some(format!("{}{{{{{hole}}}}}{}", &text[..start], &rest[stop..]))
}

/// The tools as Chat functions (the harness's tools file), in the captured order: name,
/// description and `input_schema` as `parameters`; other fields are not carried and are said.
fn tools_file(main: &Value, notes: &mut Vec<String>) -> Result<String, AgentError> {
    let tools = main["tools"].as_array().ok_or(AgentError::BadTools)?;
    let mut functions = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool["name"].as_str().ok_or(AgentError::BadTools)?;
        let Some(schema) = tool.get("input_schema") else {
            notes.push(format!(
                "`{name}` has no input_schema (a server tool): not in tools.json"
            ));
            continue;
        };
        let mut function = json!({"name": name});
        if let Some(description) = tool.get("description") {
            function["description"] = description.clone();
        }
        function["parameters"] = schema.clone();
        let extra: Vec<&str> = tool
            .as_object()
            .into_iter()
            .flat_map(|fields| fields.keys())
            .map(String::as_str)
            .filter(|key| !matches!(*key, "name" | "description" | "input_schema"))
            .collect();
        if !extra.is_empty() {
            notes.push(format!(
                "`{name}`: {} not carried (the tools file holds name, description and schema)",
                extra.join(", ")
            ));
        }
        functions.push(json!({"type": "function", "function": function}));
    }
    let mut text = serde_json::to_string_pretty(&functions).map_err(|_| AgentError::BadTools)?;
    text.push('\n');
    Ok(text)
}

/// Says which written file names this machine's working directory (Claude Code's memory folder
/// is named after it): left as captured, it would be told to every client.
fn local_paths(main: &Value, files: &[(&str, String)], notes: &mut Vec<String>) {
    let Some(cwd) = working_directory(main) else {
        return;
    };
    let slug = cwd.replace(['/', '.'], "-");
    for (name, text) in files {
        if text.contains(&cwd) || text.contains(&slug) {
            notes.push(format!(
                "{name} names this machine's working directory ({cwd}, e.g. in its memory folder): left as captured"
            ));
        }
    }
}

/// The working directory Claude Code states, in its prompt or a block of its turns.
fn working_directory(main: &Value) -> Option<String> {
    let label = FACTS[0].0;
    let system = main["system"].as_array().into_iter().flatten();
    let turns = main["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten());
    system
        .chain(turns)
        .filter_map(|block| block["text"].as_str())
        .find_map(|text| {
            let at = text.find(label)? + label.len();
            text[at..].lines().next().map(str::to_owned)
        })
        .filter(|cwd| cwd.len() > 1)
}

/// The check: the captured request through the `claude-code` harness on a Messages upstream,
/// given the written files, must carry the captured SDK line, prompt and tools; each difference
/// is said.
pub fn check(dir: &Path, captures: &[Capture], host: HostInfo) -> Vec<String> {
    let Some(main) = captures.iter().map(|c| &c.body).find(|b| is_main(b)) else {
        return vec!["no main request to check".to_owned()];
    };
    match super::claude_code_check::rewrite(dir, main, host) {
        Ok(rewritten) => super::claude_code_check::compare(main, &rewritten),
        Err(err) => vec![err],
    }
}

#[cfg(test)]
#[path = "claude_code_tests.rs"]
mod tests;
