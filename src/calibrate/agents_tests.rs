use serde_json::json;

use super::*;

fn capture(body: Value) -> Vec<Capture> {
    vec![Capture {
        path: "/v1/chat/completions".into(),
        body,
    }]
}

/// A hand-made pi-shaped request (not a copy of pi's prompt).
#[test]
fn pi_s_day_and_working_directory_become_placeholders() {
    let body = json!({"model": "m", "messages": [
        {"role": "system", "content": "You are Acme.\nUse {{braces}} literally.\nCurrent date: 2026-12-02\nCurrent working directory: /home/ann/app"},
        {"role": "user", "content": [{"type": "text", "text": "say hi"}]}
    ], "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}, "strict": false}}]});
    let files = Agent::Pi.extract(&capture(body)).expect("extracts");
    assert_eq!(files.files[0], ("system.md", "You are Acme.\nUse {{{{braces}}}} literally.\nCurrent date: {{date}}\nCurrent working directory: {{cwd}}\n".to_owned()));
    assert!(files.files[1].1.contains("\"strict\": false"));
}

/// A hand-made Qwen-shaped setup turn (not Qwen Code's words).
#[test]
fn qwen_code_s_setup_turn_becomes_its_template() {
    let setup = "Setting up.\nToday's date is Wednesday, December 2, 2026 (formatted for you).\nMy operating system is: linux\nI'm currently working in the directory: /w\nListing:\n\n/w/\n└───README.md";
    let body = json!({"model": "m", "messages": [
        {"role": "system", "content": "You are Acme."},
        {"role": "user", "content": [{"type": "text", "text": setup}]},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "say hi"}
    ], "tools": [{"type": "function", "function": {"name": "glob", "parameters": {"type": "object"}}}]});
    let files = Agent::QwenCode.extract(&capture(body)).expect("extracts");
    let setup = &files
        .files
        .iter()
        .find(|(p, _)| *p == "setup.md")
        .expect("setup")
        .1;
    assert_eq!(
        setup,
        "Setting up.\nToday's date is {{today}} (formatted for you).\nMy operating system is: {{operating_system}}\nI'm currently working in the directory: {{cwd_display}}\nListing:\n\n{{folder_listing}}\n"
    );
    assert_eq!(
        files
            .files
            .iter()
            .find(|(p, _)| *p == "setup_reply.md")
            .expect("reply")
            .1,
        "Noted.\n"
    );
}

/// A hand-made mini-swe-agent-shaped first turn and correction (not its words).
#[test]
fn mini_swe_agent_s_task_system_and_sed_spot_become_placeholders() {
    let first = "Solve: say hi\n<system_information>\nLinux 6.1 #1 SMP x86_64\n</system_information>\n### Use {{x}}:\n```sh\nls\n```\n### Edit with sed:```bash\nsed -i s/a/b/ f\n```";
    let tools = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]);
    let main = json!({"model": "m", "tools": tools, "messages": [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": first}
    ]});
    let retry = json!({"model": "m", "tools": tools, "messages": [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": first},
        {"role": "user", "content": "Call a tool."}
    ]});
    let captures = vec![
        Capture {
            path: "/v1/chat/completions".into(),
            body: main,
        },
        Capture {
            path: "/v1/chat/completions".into(),
            body: retry,
        },
    ];
    assert!(
        !Agent::MiniSweAgent.done(&captures[..1]),
        "its correction turn is awaited"
    );
    assert!(Agent::MiniSweAgent.done(&captures));
    let files = Agent::MiniSweAgent.extract(&captures).expect("extracts");
    let file = |name: &str| {
        files
            .files
            .iter()
            .find(|(p, _)| *p == name)
            .map(|(_, t)| t.clone())
    };
    assert_eq!(file("system.md").as_deref(), Some("You help.\n"));
    assert_eq!(
        file("initial.md").as_deref(),
        Some(
            "Solve: {{task}}\n<system_information>\n{{system_information}}\n</system_information>\n### Use {{{{x}}}}:\n```sh\nls\n```\n### Edit with sed:{{sed_note}}```bash\nsed -i s/a/b/ f\n```\n"
        )
    );
    assert_eq!(file("no_tool_call.md").as_deref(), Some("Call a tool.\n"));
    assert_eq!(file("sed_note.md"), None, "a Linux capture holds no note");
    assert!(
        files
            .notes
            .iter()
            .any(|n| n.contains("sed_note.md is not written")),
        "{:?}",
        files.notes
    );
}

#[test]
fn a_macos_capture_gives_the_sed_note_its_own_file() {
    let first = "Do say hi\n<system_information>\nDarwin 24.0 x\n</system_information>\n### Edit with sed:<important>\nmac\n</important>```bash\nsed\n```";
    let (initial, note) = mini_initial(first, &mut Vec::new());
    assert_eq!(note.as_deref(), Some("<important>\nmac\n</important>"));
    assert!(
        initial.contains("### Edit with sed:{{sed_note}}```bash"),
        "{initial}"
    );
}

#[test]
fn without_the_agent_s_main_request_it_says_what_it_looked_for() {
    let err = Agent::Pi
        .extract(&capture(json!({"messages": []})))
        .expect_err("nothing");
    assert!(
        err.to_string().contains("Current working directory:"),
        "{err}"
    );
}
