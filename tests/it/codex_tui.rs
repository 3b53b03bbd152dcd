//! Codex's TUI asks for its conversation's title on a thread of its own (captured from Codex
//! 0.171): a first turn, then a title request under another `session-id`, marked
//! `"thread_source":"thread_title"` in `x-codex-turn-metadata`, quoting the first words after
//! `User prompt:`. The conversation gets one title record holding the TUI's title, and the
//! upstream one title request: the TUI's own.

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};

const MAIN: &str = "01a231ee-d225-7d03-a0af-3da940337ff7";
const TITLE_THREAD: &str = "01a231ee-e04f-7222-9047-0769c70bbe87";
const FIRST_WORDS: &str = "add a --verbose flag to the cli and print every request it sends";

fn headers(session: &str, source: &str) -> Vec<(&'static str, String)> {
    vec![
        ("authorization", "Bearer sk-tui".to_owned()),
        ("originator", "codex-tui".to_owned()),
        (
            "user-agent",
            "codex-tui/0.171.0 (Debian 12.0.0; x86_64) xterm-256color (codex-tui; 0.171.0)"
                .to_owned(),
        ),
        ("session-id", session.to_owned()),
        ("thread-id", session.to_owned()),
        (
            "x-codex-turn-metadata",
            json!({"session_id": session, "thread_source": source, "request_kind": "turn"})
                .to_string(),
        ),
    ]
}

fn message(role: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
}

fn apply_patch() -> Value {
    json!({"type": "custom", "name": "apply_patch", "description": "Use the `apply_patch` tool to edit files.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"}})
}

fn main_turn() -> Value {
    json!({"model": "gpt-5.5", "stream": false, "store": false, "prompt_cache_key": MAIN,
        "input": [message("developer", "You are Codex."),
                  message("user", "<environment_context>\n  <cwd>/tmp/w</cwd>\n</environment_context>"),
                  message("user", FIRST_WORDS)],
        "tools": [{"type": "function", "name": "exec_command", "strict": false, "parameters": {"type": "object",
            "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}, apply_patch()],
        "tool_choice": "auto"})
}

/// The TUI's title request: Codex's instructions, then the title prompt quoting (the start of)
/// the first words, answered in `codex_output_schema`.
fn title_request(quoted: &str) -> Value {
    json!({"model": "gpt-5.5", "stream": false, "store": false, "prompt_cache_key": TITLE_THREAD,
        "input": [message("developer", "You are Codex."),
                  message("user", &format!("Generate a concise, single-line task title of at most 36 characters. Do not answer the request.\n\nUser prompt:\n{quoted}"))],
        "tools": [apply_patch()], "tool_choice": "auto",
        "text": {"format": {"type": "json_schema", "strict": true, "name": "codex_output_schema",
            "schema": {"type": "object", "properties": {"title": {"type": "string", "maxLength": 36}},
                "required": ["title"], "additionalProperties": false}}}})
}

fn is_codex_title(r: &Recorded) -> bool {
    String::from_utf8_lossy(&r.body).contains("codex_output_schema")
}

async fn app() -> (FakeUpstream, TestApp) {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let text = if is_codex_title(r) {
            r#"{"title":"Add verbose CLI flag"}"#
        } else if r.is_title() {
            "A title of the proxy's own"
        } else {
            "On it."
        };
        Reply::sse(&[&text_chunk(text), &finish_chunk("stop"), DONE])
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    (upstream, app)
}

async fn post(app: &TestApp, session: &str, source: &str, body: &Value) -> reqwest::Response {
    let mut request = app.post("/v1/responses").json(body);
    for (name, value) in headers(session, source) {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response
}

#[tokio::test]
async fn the_tui_s_title_thread_titles_its_conversation_once() {
    let (upstream, app) = app().await;
    let first = post(&app, MAIN, "user", &main_turn()).await;
    assert_eq!(
        first.headers()["x-title-url"].to_str().unwrap(),
        format!("/titles/{MAIN}")
    );
    first.text().await.unwrap();
    // Codex cuts long first words in its title request.
    let answer: Value = post(
        &app,
        TITLE_THREAD,
        "thread_title",
        &title_request(&FIRST_WORDS[..20]),
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(
        answer.to_string().contains("Add verbose CLI flag"),
        "the TUI gets its title answer: {answer}"
    );

    let stream = app
        .get(&format!("/titles/{MAIN}/stream"))
        .bearer_auth("sk-tui")
        .send()
        .await
        .unwrap();
    crate::support::sse::read_all(stream).await;
    let record = app.get_json(&format!("/titles/{MAIN}"), "sk-tui").await;
    assert_eq!(record["title"], "Add verbose CLI flag", "{record}");
    let list = app.get_json("/titles", "sk-tui").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");

    let requests = upstream.requests();
    assert_eq!(requests.iter().filter(|r| is_codex_title(r)).count(), 1);
    assert!(
        !requests.iter().any(Recorded::is_title),
        "no title request of the proxy's own"
    );
    // Forwarded as the TUI wrote it, not rebuilt as an opencode turn.
    let sent = requests.iter().find(|r| is_codex_title(r)).unwrap().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["name"], "codex_output_schema",
        "{sent}"
    );
}

/// The real TUI streams its title request and hangs up on `response.completed`, before the
/// upstream's `[DONE]` has been read: the title is whole and recorded all the same (seen with
/// Codex 0.171's TUI: the record had failed, "the client stopped reading its title stream").
#[tokio::test]
async fn a_tui_that_hangs_up_on_response_completed_keeps_its_title() {
    use futures_util::StreamExt;
    // The title's answer is whole (`[DONE]` sent) but its body never ends: the proxy has read
    // the end event, and the client hangs up before the body's end is polled.
    let never = std::sync::Arc::new(tokio::sync::Notify::new());
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if is_codex_title(r) {
            Reply::steps(vec![
                Step::Send(text_chunk(r#"{"title":"Add verbose CLI flag"}"#).into_bytes()),
                Step::Send(finish_chunk("stop").into_bytes()),
                Step::Send(DONE.as_bytes().to_vec()),
                Step::Wait(never.clone()),
            ])
        } else {
            Reply::sse(&[&text_chunk("On it."), &finish_chunk("stop"), DONE])
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    post(&app, MAIN, "user", &main_turn())
        .await
        .text()
        .await
        .unwrap();
    let mut body = title_request(FIRST_WORDS);
    body["stream"] = json!(true);
    let mut stream = post(&app, TITLE_THREAD, "thread_title", &body)
        .await
        .bytes_stream();
    let mut seen = String::new();
    while let Some(chunk) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.contains("response.completed") {
            break;
        }
    }
    drop(stream);
    let live = app
        .get(&format!("/titles/{MAIN}/stream"))
        .bearer_auth("sk-tui")
        .send()
        .await
        .unwrap();
    crate::support::sse::read_all(live).await;
    let record = app.get_json(&format!("/titles/{MAIN}"), "sk-tui").await;
    assert_eq!(
        (&record["status"], &record["title"]),
        (&json!("done"), &json!("Add verbose CLI flag")),
        "{record}"
    );
    assert_eq!(
        upstream
            .requests()
            .iter()
            .filter(|r| is_codex_title(r))
            .count(),
        1
    );
}
