//! The console (`/ui`) and the request inspector: served from the binary, scoped like `/titles`,
//! and — in a real headless Chromium — showing a conversation's title as it streams.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::browser::Browser;
use crate::support::sse::{DONE, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};

fn first_turn(text: &str) -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [{"role": "user", "content": text}]})
}

async fn send_turn(app: &TestApp, key: &str, text: &str) -> reqwest::Response {
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .header("x-api-key", "sk-ant-not-for-eyes")
        .bearer_auth(key)
        .json(&first_turn(text))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

#[tokio::test]
async fn the_page_and_its_files_come_from_the_binary_with_a_strict_policy() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[DONE])).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for (path, kind, marker) in [
        ("/ui", "text/html", "<script src=\"/ui/app.js\"></script>"),
        ("/ui/app.js", "text/javascript", "/titles/"),
        ("/ui/style.css", "text/css", "#detail"),
    ] {
        let response = app.get(path).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}"
        );
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("default-src 'none'") && policy.contains("script-src 'self'"),
            "{policy}"
        );
        let body = response.text().await.unwrap();
        assert!(body.contains(marker), "{path}");
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{path} loads nothing from elsewhere"
        );
    }
}

#[tokio::test]
async fn the_inspector_is_off_by_default() {
    let upstream = FakeUpstream::fixed(hello()).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    read_all(send_turn(&app, "sk-alice", "hello").await).await;
    let listed = app.get_json("/ui/api/inspect", "sk-alice").await;
    assert_eq!(listed["enabled"], false);
    assert_eq!(listed["data"], json!([]));
}

fn hello() -> Reply {
    let chunks = hello_stream();
    Reply::sse(&chunks.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn the_inspector_shows_each_caller_its_own_requests_side_by_side_without_secrets() {
    let upstream = FakeUpstream::fixed(hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    config.inspect.capacity = 2;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    config.auth.admin_token = Some("admin-ui".to_owned());
    let app = TestApp::start(config).await;
    read_all(send_turn(&app, "sk-alice", "first from alice").await).await;
    read_all(send_turn(&app, "sk-bob", "from bob").await).await;
    read_all(send_turn(&app, "sk-alice", "second from alice").await).await;

    let alice = app.get_json("/ui/api/inspect", "sk-alice").await;
    assert_eq!(alice["enabled"], true);
    let entries = alice["data"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "the ring holds 2, one is bob's: {alice}");
    let entry = &entries[0];
    assert_eq!(entry["harness"], "opencode");
    assert_eq!(entry["protocol"], "chat");
    assert_eq!(entry["client"]["path"], "/v1/chat/completions");
    assert_eq!(entry["upstream"]["path"], "/chat/completions");
    let client: Value = serde_json::from_str(entry["client"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(client, first_turn("second from alice"));
    // The upstream body is the opencode rewrite: the system prompt with its <env> block, the user
    // text JSON-quoted (docs/wire.md §1 "Quoting": user text is sent as a JSON string literal).
    let upstream_body: Value =
        serde_json::from_str(entry["upstream"]["body"].as_str().unwrap()).unwrap();
    assert!(
        upstream_body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<env>")
    );
    assert_eq!(
        upstream_body["messages"][1]["content"],
        "\"second from alice\""
    );
    let text = entry.to_string();
    for secret in ["sk-alice", "sk-ant-not-for-eyes"] {
        assert!(!text.contains(secret), "{secret} shown: {text}");
    }

    let admin = app.get_json("/ui/api/inspect", "admin-ui").await;
    assert_eq!(admin["data"].as_array().unwrap().len(), 2);
}

/// The inspector names what the harness did with the client's tools, as the response headers do.
#[tokio::test]
async fn the_inspector_names_the_tools_dropped_and_passed_through() {
    let upstream = FakeUpstream::fixed(hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let mut turn = first_turn("look it up");
    turn["tools"] = json!([
        {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"term": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    ]);
    let response = app
        .post("/v1/chat/completions")
        .bearer_auth("sk-alice")
        .json(&turn)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-harness-passthrough-tools"], "lookup");
    read_all(response).await;
    let listed = app.get_json("/ui/api/inspect", "sk-alice").await;
    let entry = &listed["data"][0];
    assert_eq!(entry["passthrough_tools"], json!(["lookup"]));
    assert_eq!(entry["dropped_tools"], json!([]));
}

/// The whole console in a real browser: a first turn, the page opened with the caller's key, the
/// title appearing while it streams and then done, and the request's two bodies side by side.
#[tokio::test]
async fn the_console_shows_a_title_as_it_streams_in_a_real_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let release = Arc::new(Notify::new());
    let held = release.clone();
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            // The title streams its first word, then waits for the test.
            Reply::steps(vec![
                Step::Send(text_chunk("Listing").into_bytes()),
                Step::Wait(held.clone()),
                Step::Send(text_chunk(" repository files").into_bytes()),
                Step::Send(finish_chunk("stop").into_bytes()),
                Step::Send(DONE.as_bytes().to_vec()),
            ])
        } else {
            hello()
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    let app = TestApp::start(config).await;
    let response = send_turn(&app, "sk-browser", "List the files of this repository").await;
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(read_all(response).await.contains("Hello"));

    browser.goto(&app.url("/ui#key=sk-browser")).await;
    let row = "const row = document.querySelector(`tr[data-conversation=\"${arguments[0]}\"]`); \
               if (!row) return null; \
               return [row.querySelector('.title').textContent, row.querySelector('.status').textContent, \
                       row.querySelector('.harness').textContent, row.querySelector('.protocol').textContent, \
                       row.querySelector('.model').textContent];";
    let live = browser
        .wait_for(
            "the title's first streamed word",
            &format!(
                "{row_fn} const r = run(); return r && r[0] === 'Listing' ? r : null;",
                row_fn = as_fn(row)
            ),
            json!([conversation]),
        )
        .await;
    assert_eq!(
        live,
        json!(["Listing", "pending", "opencode", "chat", "mock-model"])
    );

    release.notify_one();
    let done = browser
        .wait_for(
            "the finished title",
            &format!(
                "{row_fn} const r = run(); return r && r[1] === 'done' ? r : null;",
                row_fn = as_fn(row)
            ),
            json!([conversation]),
        )
        .await;
    assert_eq!(done[0], "Listing repository files");

    // The inspector: the client's body and the upstream's, side by side, the key nowhere.
    let sides = browser
        .wait_for(
            "the request's two bodies",
            "const c = document.getElementById('client-body').textContent; \
             const u = document.getElementById('upstream-body').textContent; \
             return c && u ? [c, u, document.body.innerText] : null;",
            json!([]),
        )
        .await;
    let client = sides[0].as_str().unwrap();
    let upstream_body = sides[1].as_str().unwrap();
    assert!(
        client.contains("\"content\": \"List the files of this repository\""),
        "{client}"
    );
    assert!(upstream_body.contains("<env>"), "{upstream_body}");
    assert!(
        upstream_body.contains(r#"\"List the files of this repository\""#),
        "{upstream_body}"
    );
    assert!(!sides[2].as_str().unwrap().contains("sk-browser"));

    let shot = browser.screenshot("ui-console.png").await;
    println!("console screenshot: {}", shot.display());
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000);
    browser.quit().await;
}

/// Wraps a function body so it can be called as `run()` with the same `arguments`.
fn as_fn(body: &str) -> String {
    format!(
        "const args = arguments; const run = () => (function() {{ {body} }}).apply(null, args);"
    )
}

#[tokio::test]
async fn callers_without_a_credential_get_401_from_the_inspector_not_each_others_requests() {
    let upstream = FakeUpstream::fixed(hello()).await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    config.auth.admin_token = Some("admin-ui".to_owned());
    let app = TestApp::start(config).await;
    // A caller with no credential of its own (the proxy holds the upstream key).
    let response = app
        .post("/v1/chat/completions")
        .header("x-harness", "opencode")
        .json(&first_turn("a private prompt"))
        .send()
        .await
        .unwrap();
    read_all(response).await;

    let listed = app.get("/ui/api/inspect").send().await.unwrap();
    assert_eq!(listed.status(), 401);
    let text = listed.text().await.unwrap();
    assert!(!text.contains("a private prompt"), "{text}");
    assert!(text.contains("credential"), "{text}");
    // The admin still sees it.
    let admin = app.get_json("/ui/api/inspect", "admin-ui").await;
    assert_eq!(admin["data"].as_array().unwrap().len(), 1);
}
