//! `calibrate opencode` through a real socket: hand-made opencode-shaped requests (not copies of a
//! real prompt) are answered with a complete canned stream, the capture ends by itself once the
//! title and the main request arrived, the written files load as a prompts directory, and the
//! `opencode` harness then rewrites the captured request into that request again, apart from the
//! documented `temperature` and key order.

use harness_proxy::calibrate;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::prompts::Prompts;
use serde_json::{Value, json};

use crate::support::sse::{data_lines, read_all};

const SYSTEM_PREFIX: &str = "You are Acme Code, a careful agent.\n\n# Tone\nBe brief.";

fn main_request() -> Value {
    let system = format!(
        "{SYSTEM_PREFIX}\n\nYou are powered by the model named m1. The exact model ID is lab/m1\n\
         Here is some useful information about the environment you are running in:\n<env>\n  \
         Working directory: /home/ann/app\n  Workspace root folder: /home/ann/app\n  \
         Is directory a git repo: no\n  Platform: linux\n  Today's date: Mon Nov 30 2026\n</env>\n\
         Instructions from: /home/ann/app/AGENTS.md\n# Rules\nTabs.\n\n\
         Skills are listed here.\n<available_skills>\n  <skill>\n    <name>s</name>\n    \
         <location>&lt;built-in&gt;</location>\n  </skill>\n</available_skills>"
    );
    let tool = |name: &str, description: &str| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"]}}})
    };
    let mut tools = vec![tool(
        "bash",
        "Runs commands.\nOS: linux, Shell: bash\nScratch space: `/scratch/opencode`.\nTimes out after 120000ms.",
    )];
    for name in [
        "edit",
        "glob",
        "grep",
        "read",
        "skill",
        "task",
        "todowrite",
        "webfetch",
        "write",
    ] {
        tools.push(tool(name, &format!("The {name} tool.")));
    }
    json!({
        "model": "m1",
        "max_tokens": 32000,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "\"say hi\""}],
        "tools": tools,
        "tool_choice": "auto",
        "stream": true,
        "stream_options": {"include_usage": true}
    })
}

fn title_request() -> Value {
    json!({"model": "m1", "max_tokens": 32000, "stream": true, "messages": [
        {"role": "system", "content": "You name sessions.\nShort names only.\n"},
        {"role": "user", "content": "Generate a title for this conversation:\n"},
        {"role": "user", "content": "\"say hi\""}
    ]})
}

#[tokio::test]
async fn captured_opencode_requests_become_a_prompts_directory_that_reproduces_them() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    // Never told: the capture must end by itself once both requests arrived.
    let (_keep, stop) = tokio::sync::oneshot::channel::<()>();
    let capture = tokio::spawn(calibrate::capture(listener, async move {
        let _ = stop.await;
    }));
    let client = reqwest::Client::new();
    for body in [title_request(), main_request()] {
        let response = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let lines = data_lines(&read_all(response).await);
        assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
        let finish: Value = serde_json::from_str(&lines[lines.len() - 2]).unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    }
    let captures = tokio::time::timeout(std::time::Duration::from_secs(10), capture)
        .await
        .expect("the capture ends once both requests arrived")
        .unwrap()
        .unwrap();
    assert_eq!(captures.len(), 2);

    let out = tempfile::tempdir().unwrap();
    let host = HostInfo {
        shell: None,
        temp_dir: "/scratch".into(),
        utc_offset: chrono::FixedOffset::east_opt(0).unwrap(),
    };
    let outcome = calibrate::write(out.path(), &captures, &host).unwrap();
    let read =
        |name: &str| std::fs::read_to_string(out.path().join("opencode").join(name)).unwrap();
    assert_eq!(read("system.md"), format!("{SYSTEM_PREFIX}\n"));
    assert_eq!(read("title.md"), "You name sessions.\nShort names only.\n");
    assert!(
        read("skills.md").starts_with("Skills are listed here.\n<available_skills>"),
        "{}",
        read("skills.md")
    );
    let tools: Value = serde_json::from_str(&read("tools.json")).unwrap();
    assert_eq!(
        tools[0]["function"]["description"],
        "Runs commands.\nOS: {{os}}, Shell: {{shell}}\nScratch space: `{{temp_dir}}`.\nTimes out after {{timeout_description}}."
    );
    let prompts = Prompts::load(Some(out.path())).unwrap();
    assert_eq!(prompts.tools.len(), 10);
    assert!(
        outcome
            .differences
            .iter()
            .any(|d| d.starts_with("opencode/system.md: differs")),
        "{:?}",
        outcome.differences
    );
    // The rewrite of what opencode sent is what it sent, but for the two documented differences.
    assert_eq!(outcome.rewrite.len(), 2, "{:?}", outcome.rewrite);
    assert_eq!(
        outcome.rewrite[0],
        "/temperature: rewrite 1 / opencode absent"
    );
    assert!(
        outcome.rewrite[1].starts_with("key order:"),
        "{:?}",
        outcome.rewrite
    );
}

/// The command itself: it prints where it listens, ends by itself once opencode's two requests
/// came, writes the files and prints the rewrite check.
#[tokio::test]
async fn the_calibrate_command_listens_captures_and_reports() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};

    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
        .args(["calibrate", "opencode", "--listen", "127.0.0.1:0", "--out"])
        .arg(out.path())
        .env_clear()
        .env("TMPDIR", "/scratch")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (line, stdout)
    });
    let (line, mut stdout) = tokio::time::timeout(std::time::Duration::from_secs(20), first)
        .await
        .expect("the command says where it listens")
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("calibrate: listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let client = reqwest::Client::new();
    for body in [title_request(), main_request()] {
        let response = client
            .post(format!("{base}/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        read_all(response).await;
    }
    let rest = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        (text, child.wait().unwrap())
    });
    let (text, status) = tokio::time::timeout(std::time::Duration::from_secs(20), rest)
        .await
        .expect("the command ends once both requests came")
        .unwrap();
    assert!(status.success(), "{text}");
    assert!(text.contains("captured 2 request(s)"), "{text}");
    assert!(
        text.contains("/temperature: rewrite 1 / opencode absent"),
        "{text}"
    );
    assert!(out.path().join("opencode/tools.json").is_file());
}
