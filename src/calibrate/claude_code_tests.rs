//! Hand-made Claude Code-shaped requests, in our own words (not Claude Code's texts).

use serde_json::{Value, json};

use super::*;

const SDK: &str = "You are an Acme kit agent.";
const BILLING_LINE: &str = "x-anthropic-billing-header: cc_version=9.9.9; cc_entrypoint=test;";

/// A prompt as an older Claude Code shaped it: the client facts in its environment section.
const PROMPT: &str = "\nYou help with code, {{literally}}.\n\n# Tools\n - Prefer dedicated tools over Bash when one fits; keep Bash for shells. BashOutput stays.\n\n# Session-specific guidance\n - Ask first.\n\n# auto memory\nMemory lives in `/home/ann/.claude/projects/-home-ann-app/memory/`.\n\n\n\n# Environment\nFacts:\n - Primary working directory: /home/ann/app\n - Is a git repository: true\n - Platform: linux\n - Shell: zsh\n - OS Version: Linux 6.1\n - You are powered by the model named Acme 1. Its exact model ID is acme-1.\n\n# Context management\nKeep notes.";

fn tools() -> Value {
    json!([
        {"name": "Write", "description": "Writes a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "Bash", "description": "Runs a command.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
        {"name": "Later", "description": "Stands in for tools loaded later.", "input_schema": {"type": "object", "properties": {}}, "defer_loading": true}
    ])
}

fn main_request(prompt: &str, first_turn: &str) -> Value {
    json!({"model": "acme-1", "stream": true, "system": [
        {"type": "text", "text": BILLING_LINE},
        {"type": "text", "text": SDK, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}
    ], "messages": [{"role": "user", "content": [
        {"type": "text", "text": first_turn},
        {"type": "text", "text": "say hi"}
    ]}], "tools": tools(), "max_tokens": 1000})
}

fn captures(bodies: Vec<Value>) -> Vec<Capture> {
    bodies
        .into_iter()
        .map(|body| Capture {
            path: "/v1/messages".into(),
            body,
        })
        .collect()
}

fn file<'a>(files: &'a AgentFiles, name: &str) -> Option<&'a str> {
    files
        .files
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| text.as_str())
}

#[test]
fn the_prompt_is_split_as_the_harness_joins_it_and_the_facts_become_placeholders() {
    let files = extract(&captures(vec![main_request(PROMPT, "hello")])).expect("extracts");
    assert_eq!(file(&files, "sdk.md"), Some(format!("{SDK}\n").as_str()));
    assert_eq!(
        file(&files, "system.md"),
        Some(
            "\nYou help with code, {{{{literally}}}}.\n\n# Tools\n - Prefer dedicated tools over {{shell_tool}} when one fits; keep {{shell_tool}} for shells. BashOutput stays.\n"
        )
    );
    assert_eq!(
        file(&files, "guidance.md"),
        Some(
            "# Session-specific guidance\n - Ask first.\n\n# auto memory\nMemory lives in `/home/ann/.claude/projects/-home-ann-app/memory/`.\n\n\n"
        )
    );
    assert_eq!(
        file(&files, "environment.md"),
        Some(
            "# Environment\nFacts:\n - Primary working directory: {{cwd}}\n - Is a git repository: {{git}}\n - Platform: {{platform}}\n - Shell: {{shell}}\n - OS Version: {{os_version}}\n - You are powered by the model named {{model_name}}. Its exact model ID is {{model_id}}.\n\n# Context management\nKeep notes.\n"
        )
    );
    assert_eq!(file(&files, "title.md"), None, "no title request came");
    let notes = files.notes.join("\n");
    assert!(
        notes.contains("`Later`: defer_loading not carried"),
        "{notes}"
    );
    assert!(
        notes.contains("guidance.md names this machine's working directory"),
        "{notes}"
    );
    assert!(notes.contains("title.md is not written"), "{notes}");
    assert!(!notes.contains("environment section names no"), "{notes}");
}

#[test]
fn the_tools_are_written_as_captured_in_the_captured_order() {
    let files = extract(&captures(vec![main_request(PROMPT, "hello")])).expect("extracts");
    let written: Value =
        serde_json::from_str(file(&files, "tools.json").expect("tools")).expect("JSON");
    let names: Vec<&str> = written
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["Write", "Bash", "Later"]);
    assert_eq!(written[1]["function"]["description"], "Runs a command.");
    assert_eq!(
        written[1]["function"]["parameters"],
        tools()[1]["input_schema"]
    );
    assert_eq!(written[2]["function"].get("defer_loading"), None);
}

#[test]
fn the_billing_line_is_never_written() {
    let files = extract(&captures(vec![main_request(PROMPT, "hello")])).expect("extracts");
    for (name, text) in &files.files {
        assert!(!text.contains(BILLING), "{name}");
    }
    assert!(!files.notes.iter().any(|n| n.contains(BILLING)));
    // A billing line where a text to be written is (not the first block): nothing is written.
    let mut body = main_request(PROMPT, "hello");
    body["system"][1]["text"] = json!(format!("{SDK}\n{BILLING_LINE}"));
    assert_eq!(extract(&captures(vec![body])), Err(AgentError::BillingLine));
}

/// A Claude Code that states its facts in its first turn: the environment holds none of them,
/// which is said, and the working directory is still found for the local-path note.
#[test]
fn facts_stated_elsewhere_are_said_and_not_invented() {
    let prompt = "You help.\n\n# Session-specific guidance\n - Ask first. Notes go in /srv/w/notes.\n\n# Environment\n - Models change.";
    let turn = "<system-reminder>\n - Primary working directory: /srv/w\n - Platform: linux\n</system-reminder>";
    let files = extract(&captures(vec![main_request(prompt, turn)])).expect("extracts");
    assert_eq!(
        file(&files, "environment.md"),
        Some("# Environment\n - Models change.\n")
    );
    let notes = files.notes.join("\n");
    assert!(
        notes.contains("names no {{cwd}}, {{git}}, {{platform}}, {{shell}}, {{os_version}}, {{model_name}}, {{model_id}}"),
        "{notes}"
    );
    assert!(
        notes.contains("guidance.md names this machine's working directory (/srv/w"),
        "{notes}"
    );
    assert!(notes.contains("system.md has no {{shell_tool}}"), "{notes}");
}

#[test]
fn a_captured_title_request_gives_title_md_and_the_main_request_ends_the_capture() {
    let title = json!({"model": "acme-1", "system": [
        {"type": "text", "text": BILLING_LINE},
        {"type": "text", "text": SDK},
        {"type": "text", "text": "Name this session in {{a few}} words."}
    ], "messages": [{"role": "user", "content": "say hi"}], "tools": [],
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}});
    let only_title = captures(vec![title.clone()]);
    assert!(is_title(&only_title[0].body) && !is_main(&only_title[0].body));
    assert!(!done(&only_title), "the main request is awaited");
    let both = captures(vec![title, main_request(PROMPT, "hello")]);
    assert!(done(&both));
    let files = extract(&both).expect("extracts");
    assert_eq!(
        file(&files, "title.md"),
        Some("Name this session in {{{{a few}}}} words.\n")
    );
}

#[test]
fn a_prompt_without_an_environment_section_is_refused() {
    let err = extract(&captures(vec![main_request("You help.", "hello")])).expect_err("no split");
    assert_eq!(err, AgentError::NoSection("# Environment"));
}

/// The proof: the files written from a capture make the harness send the captured SDK line,
/// prompt and tools again (a Claude Code that states its facts in its first turn).
#[test]
fn the_harness_given_the_written_files_sends_what_was_captured() {
    let prompt = "\nYou help.\n\n# Tools\n - Prefer dedicated tools over Bash when one fits.\n\n# Session-specific guidance\n - Ask first.\n\n\n\n# Environment\n - Models change.";
    let turn = "<system-reminder>\n - Primary working directory: /srv/w\n</system-reminder>";
    let captured = captures(vec![main_request(prompt, turn)]);
    let files = extract(&captured).expect("extracts");
    let out = tempfile::tempdir().expect("a temp dir");
    super::super::write_agent_files(out.path(), super::super::agents::Agent::ClaudeCode, &files)
        .expect("writes");
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).expect("UTC"),
    };
    assert_eq!(check(out.path(), &captured, host), Vec::<String>::new());
}
