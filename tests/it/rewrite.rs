//! `harness-proxy rewrite` goes through the serving path: for a request in any client protocol
//! it prints the very body the server sends upstream for it, and with `--title` the very title
//! request.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// `harness-proxy rewrite ARGS` with `body` on stdin, configured as `test_config` is.
fn rewrite(upstream: &str, args: &[&str], body: &Value) -> Vec<u8> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
        .args(["rewrite", "--harness", "opencode", "--upstream", upstream])
        .args(args)
        .env_clear()
        .env("HARNESS_PROXY__OPENCODE__TODAY", "Sat Nov 29 2025")
        .env("HARNESS_PROXY__OPENCODE__PLATFORM", "linux")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&serde_json::to_vec(body).unwrap())
        .expect("write stdin");
    let out = child.wait_with_output().expect("it ends");
    assert!(
        out.status.success(),
        "rewrite {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut printed = out.stdout;
    assert_eq!(printed.pop(), Some(b'\n'), "one line");
    printed
}

#[tokio::test]
async fn rewrite_prints_what_the_server_sends_upstream_for_every_protocol() {
    let upstream = FakeUpstream::start(|_: &Recorded, _| {
        Reply::sse(&[&text_chunk("Fine."), &finish_chunk("stop"), DONE])
    })
    .await;
    let base = upstream.base_url();
    let app = TestApp::start(test_config(&base)).await;
    // Each in other words: the same words are titled once (`memory::recent`).
    let cases = [
        (
            "chat",
            "/v1/chat/completions",
            json!({"model": "mock-model", "stream": true,
                   "messages": [{"role": "user", "content": "Write the release notes"}]}),
        ),
        (
            "responses",
            "/v1/responses",
            json!({"model": "mock-model", "stream": true, "input": "Fix the flaky test"}),
        ),
        (
            "messages",
            "/v1/messages",
            json!({"model": "mock-model", "max_tokens": 100, "stream": true,
                   "messages": [{"role": "user", "content": "Rename the module"}]}),
        ),
        (
            "gemini",
            "/v1beta/models/mock-model:streamGenerateContent",
            json!({"contents": [{"role": "user", "parts": [{"text": "Explain the build"}]}]}),
        ),
    ];
    for (protocol, path, body) in cases {
        let seen = upstream.count();
        // A conversation the client names: its prompt-cache key is the caller's scope of it.
        let session = format!("conv-{protocol}");
        let response = app
            .post(path)
            .header("x-api-key", "sk-client")
            .header("x-session-id", &session)
            .json(&body)
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), 200, "{protocol}");
        let _ = response.bytes().await;
        let sent = upstream.wait_for_requests(seen + 2).await;
        let sent = &sent[seen..];
        let main = sent.iter().find(|r| !r.is_title()).expect("main request");
        let title = sent.iter().find(|r| r.is_title()).expect("title request");
        let session_header = format!("x-session-id:{session}");
        let mut args = vec![
            "--protocol",
            protocol,
            "--header",
            "x-api-key:sk-client",
            "--header",
            &session_header,
        ];
        if protocol == "gemini" {
            args.extend(["--model", "mock-model"]);
        }
        assert_eq!(
            String::from_utf8(rewrite(&base, &args, &body)).unwrap(),
            String::from_utf8(main.body.to_vec()).unwrap(),
            "{protocol}: the upstream body"
        );
        args.push("--title");
        assert_eq!(
            String::from_utf8(rewrite(&base, &args, &body)).unwrap(),
            String::from_utf8(title.body.to_vec()).unwrap(),
            "{protocol}: the title request"
        );
    }
}
