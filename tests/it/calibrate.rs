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
    let token = calibrate::token();
    let url = format!(
        "http://{}/{token}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    // Never told: the capture must end by itself once both requests arrived.
    let (_keep, stop) = tokio::sync::oneshot::channel::<()>();
    let capture = tokio::spawn(calibrate::capture(listener, token, async move {
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

/// The bytes held are bounded too: a request that would pass `MAX_CAPTURE_BYTES` is 503 and not
/// kept, and what was kept is all `capture` returns.
#[tokio::test]
async fn captures_beyond_the_byte_bound_are_refused_and_not_kept() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let token = calibrate::token();
    let url = format!(
        "http://{}/{token}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let (stop_now, stop) = tokio::sync::oneshot::channel::<()>();
    let capture = tokio::spawn(calibrate::capture(listener, token, async move {
        let _ = stop.await;
    }));
    let client = reqwest::Client::new();
    let filler =
        json!({"model": "m1", "messages": [{"role": "user", "content": "x".repeat(1024 * 1024)}]});
    let size = filler.to_string().len();
    let fits = calibrate::MAX_CAPTURE_BYTES / size;
    assert!(
        fits < calibrate::MAX_CAPTURES,
        "the byte bound is the one met"
    );
    for i in 0..=fits {
        let response = client.post(&url).json(&filler).send().await.unwrap();
        let expected = if i < fits { 200 } else { 503 };
        assert_eq!(response.status(), expected, "request {i}");
    }
    let _ = stop_now.send(());
    let captures = tokio::time::timeout(std::time::Duration::from_secs(10), capture)
        .await
        .expect("the capture stops when told")
        .unwrap()
        .unwrap();
    assert_eq!(captures.len(), fits);
}

/// A running `harness-proxy calibrate opencode` child: the base URL it printed (with its token)
/// and its stdout so far.
struct Command {
    child: std::process::Child,
    base: String,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Command {
    async fn start(out: &std::path::Path, extra: &[&str]) -> Self {
        Self::start_for("opencode", out, extra).await
    }

    async fn start_for(client: &str, out: &std::path::Path, extra: &[&str]) -> Self {
        use std::io::BufRead;
        use std::process::Stdio;

        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
            .args(["calibrate", client, "--listen", "127.0.0.1:0", "--out"])
            .arg(out)
            .args(extra)
            .env_clear()
            .env("TMPDIR", "/scratch")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let first = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            (line, stdout)
        });
        let (line, stdout) = tokio::time::timeout(std::time::Duration::from_secs(20), first)
            .await
            .expect("the command says where it listens")
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("calibrate: listening on ")
            .unwrap_or_else(|| panic!("{line}"))
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_owned();
        Self {
            child,
            base,
            stdout,
        }
    }

    /// `http://127.0.0.1:PORT`, without the token.
    fn origin(&self) -> String {
        let after_scheme = self.base.strip_prefix("http://").unwrap();
        let authority = after_scheme.split('/').next().unwrap();
        format!("http://{authority}")
    }

    /// Waits for the command to end: everything else it printed, and its exit status.
    async fn finish(self) -> (String, std::process::ExitStatus) {
        use std::io::Read;
        let Self {
            mut child,
            mut stdout,
            ..
        } = self;
        let rest = tokio::task::spawn_blocking(move || {
            let mut text = String::new();
            stdout.read_to_string(&mut text).unwrap();
            let mut errors = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                stderr.read_to_string(&mut errors).unwrap();
            }
            text.push_str(&errors);
            (text, child.wait().unwrap())
        });
        tokio::time::timeout(std::time::Duration::from_secs(20), rest)
            .await
            .expect("the command ends once both requests came")
            .unwrap()
    }
}

async fn send_pair(client: &reqwest::Client, base: &str) -> Vec<u16> {
    let mut statuses = Vec::new();
    for body in [title_request(), main_request()] {
        let response = client
            .post(format!("{base}/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
        read_all(response).await;
    }
    statuses
}

/// The command itself: it prints where it listens (a base URL holding its one-time token), ends
/// by itself once opencode's two requests came, shows what it captured, writes the files (told
/// `--yes`) and prints the rewrite check.
#[tokio::test]
async fn the_calibrate_command_listens_captures_and_reports() {
    let out = tempfile::tempdir().unwrap();
    let command = Command::start(out.path(), &["--yes"]).await;
    assert_eq!(
        send_pair(&reqwest::Client::new(), &command.base).await,
        [200, 200]
    );
    let (text, status) = command.finish().await;
    assert!(status.success(), "{text}");
    assert!(text.contains("captured 2 request(s)"), "{text}");
    assert!(
        text.contains("system prompt: ") && text.contains("You are Acme Code, a careful agent."),
        "{text}"
    );
    assert!(text.contains("title prompt: You name sessions."), "{text}");
    assert!(text.contains("tools (10): bash, edit, glob"), "{text}");
    assert!(
        text.contains("/temperature: rewrite 1 / opencode absent"),
        "{text}"
    );
    assert!(out.path().join("opencode/tools.json").is_file());
}

/// Issue 17 item 9: only the operator's opencode, told the printed base URL, is captured. A
/// request without the token is 404 and not kept; a page's `text/plain` POST or foreign Origin is
/// refused even with the token; and what a capture holds is bounded.
#[tokio::test]
async fn calibrate_captures_only_json_requests_that_carry_its_token_and_within_a_bound() {
    let out = tempfile::tempdir().unwrap();
    let command = Command::start(out.path(), &["--yes"]).await;
    let client = reqwest::Client::new();
    assert!(
        command.base.len() > command.origin().len() + "/v1".len() + 20,
        "a token in the base URL: {}",
        command.base
    );
    // The probe's pair, without the token (at the root, and under a guessed token): not captured.
    let guessed = format!("{}/00000000000000000000000000000000/v1", command.origin());
    for base in [format!("{}/v1", command.origin()), guessed] {
        assert_eq!(send_pair(&client, &base).await, [404, 404], "{base}");
        let models = client.get(format!("{base}/models")).send().await.unwrap();
        assert_eq!(models.status(), 404);
    }
    // With the token, as a web page would send it.
    let url = format!("{}/chat/completions", command.base);
    for body in [title_request(), main_request()] {
        let plain = client
            .post(&url)
            .header("content-type", "text/plain")
            .header("origin", "http://evil.example")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status(), 415);
        let foreign = client
            .post(&url)
            .header("origin", "http://evil.example")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(foreign.status(), 403);
        let rebound = client
            .post(&url)
            .header("host", "evil.example")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(rebound.status(), 403);
    }
    // Requests that are neither opencode's title nor its main request pile up to the bound only.
    let filler =
        json!({"model": "m1", "messages": [{"role": "user", "content": "x".repeat(1000)}]});
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let response = client.post(&url).json(&filler).send().await.unwrap();
        statuses.push(response.status().as_u16());
    }
    let kept = statuses.iter().take_while(|s| **s == 200).count();
    assert_eq!(kept, calibrate::MAX_CAPTURES, "{statuses:?}");
    assert!(statuses[kept..].iter().all(|s| *s == 503), "{statuses:?}");
    // Nothing refused was captured: the process is still waiting for opencode's pair.
    let mut command = command;
    assert!(
        command.child.try_wait().unwrap().is_none(),
        "still capturing"
    );
    command.child.kill().unwrap();
    let _ = command.child.wait();
    assert!(!out.path().join("opencode").exists());
}

/// Without `--yes` the command shows what it captured and asks; with stdin closed (no one to
/// answer) it writes nothing and says so.
#[tokio::test]
async fn without_yes_and_with_stdin_closed_calibrate_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let command = Command::start(out.path(), &[]).await;
    assert_eq!(
        send_pair(&reqwest::Client::new(), &command.base).await,
        [200, 200]
    );
    let (text, status) = command.finish().await;
    assert!(!status.success(), "{text}");
    assert!(
        text.contains("You are Acme Code, a careful agent."),
        "the summary: {text}"
    );
    assert!(text.contains("--yes"), "{text}");
    assert!(text.contains("nothing written"), "{text}");
    assert!(!out.path().join("opencode").exists(), "{text}");
}

const CC_BILLING: &str = "x-anthropic-billing-header: cc_version=0.0.1; cc_entrypoint=test;";

/// A hand-made Claude Code-shaped main request (our words, not Claude Code's): the billing line,
/// the SDK line and a prompt in three system blocks, two tools.
fn claude_code_request() -> Value {
    let prompt = "\nYou are a careful helper.\n\n# Tools\n - Prefer dedicated tools over Bash when one fits.\n\n# Session-specific guidance\n - Ask when unsure.\n\n# Environment\n - Keep notes.";
    json!({"model": "claude-acme-1", "stream": true, "max_tokens": 1000, "system": [
        {"type": "text", "text": CC_BILLING},
        {"type": "text", "text": "You are an agent of the Acme kit.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}
    ], "messages": [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\n - Primary working directory: /srv/work\n</system-reminder>"},
        {"type": "text", "text": "say hi"}
    ]}], "tools": [
        {"name": "Write", "description": "Writes a file.", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
        {"name": "Bash", "description": "Runs a command.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
    ]})
}

/// `calibrate claude-code` through a scripted Claude Code: its preflight, a token count and its
/// main request are answered as Claude Code expects (a complete Messages stream), the command
/// ends by itself, writes the harness's files without the billing line and reports the check.
#[tokio::test]
async fn calibrate_claude_code_writes_the_harness_files_and_never_the_billing_line() {
    let out = tempfile::tempdir().unwrap();
    let command = Command::start_for("claude-code", out.path(), &["--yes"]).await;
    assert!(
        !command.base.ends_with("/v1"),
        "Claude Code adds /v1: {}",
        command.base
    );
    let client = reqwest::Client::new();
    let head = client
        .head(format!("{}/api/hello", command.base))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    let count = client
        .post(format!(
            "{}/v1/messages/count_tokens?beta=true",
            command.base
        ))
        .json(&json!({"model": "claude-acme-1", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(count.status(), 200);
    let count: Value = count.json().await.unwrap();
    assert!(count["input_tokens"].as_u64().unwrap() > 0);
    let response = client
        .post(format!("{}/v1/messages?beta=true", command.base))
        .json(&claude_code_request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events: Vec<String> = data_lines(&read_all(response).await)
        .iter()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        events,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let (text, status) = command.finish().await;
    assert!(status.success(), "{text}");
    assert!(text.contains("captured 1 request(s)"), "{text}");
    assert!(
        text.contains("rewrite check: the captured request, rewritten by the claude-code harness"),
        "{text}"
    );
    let dir = out.path().join("claude-code");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read("sdk.md"), "You are an agent of the Acme kit.\n");
    assert_eq!(
        read("system.md"),
        "\nYou are a careful helper.\n\n# Tools\n - Prefer dedicated tools over {{shell_tool}} when one fits.\n"
    );
    assert_eq!(
        read("guidance.md"),
        "# Session-specific guidance\n - Ask when unsure.\n"
    );
    assert_eq!(read("environment.md"), "# Environment\n - Keep notes.\n");
    let tools: Value = serde_json::from_str(&read("tools.json")).unwrap();
    assert_eq!(tools[0]["function"]["name"], "Write", "the captured order");
    assert!(!dir.join("title.md").exists(), "no title request came");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let written = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!written.contains("x-anthropic-billing-header"));
    }
    assert!(
        !text.contains("x-anthropic-billing-header"),
        "not even shown: {text}"
    );
}
