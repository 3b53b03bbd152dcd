//! Titles through the real server: the title request's exact body, ordering modes, failure modes,
//! the live stream, scoping between callers, and persistence across restarts.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::sse::{DONE, finish_chunk, hello_stream, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, test_config};
use harness_proxy::config::{StoreUrl, TitleOrder};

const TITLE_PROMPT: &str = include_str!("../../prompts/opencode/title.md");

pub(crate) fn main_reply() -> Reply {
    Reply::sse(
        &hello_stream()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
}

pub(crate) fn title_reply(title: &str) -> Reply {
    Reply::sse(&[&text_chunk(title), &finish_chunk("stop"), DONE])
}

/// A title stream that sends `before`, waits until the returned `Notify` is told, then sends
/// `after` and ends.
pub(crate) fn held_title(before: &[&str], after: &[&str]) -> (Reply, Arc<Notify>) {
    let release = Arc::new(Notify::new());
    let mut steps: Vec<Step> = before
        .iter()
        .map(|t| Step::Send(text_chunk(t).into_bytes()))
        .collect();
    steps.push(Step::Wait(release.clone()));
    steps.extend(after.iter().map(|t| Step::Send(text_chunk(t).into_bytes())));
    steps.push(Step::Send(DONE.as_bytes().to_vec()));
    (Reply::steps(steps), release)
}

/// Title requests get `title`, everything else the hello answer.
pub(crate) async fn upstream_with_title(title: Reply) -> FakeUpstream {
    FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            title.clone()
        } else {
            main_reply()
        }
    })
    .await
}

pub(crate) fn first_turn(text: &str) -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"},
        {"role": "user", "content": text}
    ]})
}

pub(crate) async fn chat(
    app: &TestApp,
    body: &Value,
    conversation: &str,
    token: &str,
) -> reqwest::Response {
    app.post("/v1/chat/completions")
        .header("x-conversation-id", conversation)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Polls the record until it is no longer pending (bounded).
pub(crate) async fn settled(app: &TestApp, id: &str, token: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while tokio::time::Instant::now() < deadline {
        let response = app
            .get(&format!("/titles/{id}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            let record: Value = response.json().await.unwrap();
            if record["status"] != "pending" {
                return record;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("title {id} did not settle");
}

pub(crate) fn titles_of(upstream: &FakeUpstream) -> Vec<Recorded> {
    upstream
        .requests()
        .into_iter()
        .filter(Recorded::is_title)
        .collect()
}

#[tokio::test]
async fn first_turn_sends_the_exact_title_request_and_records_the_sanitized_title() {
    let upstream = upstream_with_title(Reply::sse(&[
        &text_chunk("<think>the user wants a login fix</think>\"Login"),
        &text_chunk(" bug fix\"\nsecond line"),
        &finish_chunk("stop"),
        DONE,
    ]))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = chat(
        &app,
        &first_turn("Fix the login bug\nin auth.rs"),
        "conv-1",
        "key-a",
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-conversation-id"], "conv-1");
    assert_eq!(response.headers()["x-title-url"], "/titles/conv-1");
    assert_eq!(
        read_all(response).await,
        hello_stream()
            .into_iter()
            .filter(|c| !c.contains("\"usage\""))
            .collect::<String>()
    );

    let record = settled(&app, "conv-1", "key-a").await;
    assert_eq!(record["status"], "done");
    assert_eq!(record["title"], "Login bug fix");
    assert_eq!(record["model"], "mock-model");
    assert_eq!(record["harness"], "opencode");
    assert!(record.get("error").is_none());

    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].is_title(),
        "parallel mode dispatches the title first"
    );
    let expected = json!({
        "model": "mock-model", "max_tokens": 32000, "temperature": 1, "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": TITLE_PROMPT},
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": "\"Fix the login bug\nin auth.rs\""}
        ]
    });
    assert_eq!(
        String::from_utf8(requests[0].body.to_vec()).unwrap(),
        expected.to_string()
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer key-a"),
        "same credentials as the main request"
    );
}

#[tokio::test]
async fn a_second_turn_and_a_retried_first_turn_make_no_title_request() {
    let upstream = upstream_with_title(title_reply("Login fix")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    read_all(chat(&app, &first_turn("Fix login"), "conv-2", "k").await).await;
    settled(&app, "conv-2", "k").await;
    // The same first turn again (a client retry).
    let retry = chat(&app, &first_turn("Fix login"), "conv-2", "k").await;
    assert!(retry.headers().get("x-title-url").is_none());
    read_all(retry).await;
    // A later turn of another conversation: an assistant message means it is not a first turn.
    let mut second = first_turn("Fix login");
    second["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": "Done."}));
    second["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "thanks"}));
    read_all(chat(&app, &second, "conv-3", "k").await).await;
    assert_eq!(titles_of(&upstream).len(), 1);
    assert_eq!(upstream.count(), 4);
    let (status, _, _) = crate::support::error_of(
        app.get("/titles/conv-3")
            .bearer_auth("k")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn concurrent_first_turns_make_one_title_request() {
    let (title, release) = held_title(&["Shared"], &[]);
    let upstream = upstream_with_title(title).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = first_turn("same question");
    let calls: Vec<_> = (0..6)
        .map(|_| chat(&app, &body, "conv-shared", "k"))
        .collect();
    for response in futures_util::future::join_all(calls).await {
        assert_eq!(response.status(), 200);
        read_all(response).await;
    }
    release.notify_one();
    assert_eq!(settled(&app, "conv-shared", "k").await["title"], "Shared");
    assert_eq!(titles_of(&upstream).len(), 1);
    assert_eq!(upstream.count(), 7);
}

#[tokio::test]
async fn parallel_mode_does_not_wait_for_the_title() {
    let (title, release) = held_title(&["Slow"], &[" title"]);
    let upstream = upstream_with_title(title).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // The whole answer arrives while the title stream is still held open.
    let response = chat(&app, &first_turn("Explain the cache"), "conv-par", "k").await;
    let text = read_all(response).await;
    assert!(text.ends_with(DONE));
    let pending = app.get_json("/titles/conv-par", "k").await;
    assert_eq!(pending["status"], "pending");
    release.notify_one();
    assert_eq!(settled(&app, "conv-par", "k").await["title"], "Slow title");
}

#[tokio::test]
async fn before_mode_sends_the_main_request_after_the_title_stream_ends() {
    let (title, release) = held_title(&["First"], &[]);
    // Whether the main request arrived before the title stream was let finish.
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let early = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let upstream = FakeUpstream::start({
        let (released, early) = (released.clone(), early.clone());
        move |r: &Recorded, _| {
            if r.is_title() {
                return title.clone();
            }
            if !released.load(std::sync::atomic::Ordering::SeqCst) {
                early.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            main_reply()
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = TitleOrder::Before;
    let app = TestApp::start(config).await;
    let body = first_turn("Order matters");
    let pending = tokio::spawn({
        let request = app
            .post("/v1/chat/completions")
            .header("x-conversation-id", "conv-before")
            .bearer_auth("k")
            .json(&body);
        async move { read_all(request.send().await.unwrap()).await }
    });
    upstream.wait_for_requests(1).await;
    // The title has streamed its first words (so it is well under way) before it is let finish.
    let mut live = app
        .get("/titles/conv-before/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    live.chunk().await.unwrap();
    released.store(true, std::sync::atomic::Ordering::SeqCst);
    release.notify_one();
    let text = pending.await.unwrap();
    assert!(text.ends_with(DONE));
    let requests = upstream.requests();
    assert!(requests[0].is_title() && !requests[1].is_title());
    assert!(
        !early.load(std::sync::atomic::Ordering::SeqCst),
        "the main request went out while the title stream was open"
    );
    assert_eq!(settled(&app, "conv-before", "k").await["title"], "First");
}

#[tokio::test]
async fn after_mode_sends_the_title_once_the_answer_ended() {
    let upstream = upstream_with_title(title_reply("Later")).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = TitleOrder::After;
    let app = TestApp::start(config).await;
    read_all(chat(&app, &first_turn("After the answer"), "conv-after", "k").await).await;
    assert_eq!(settled(&app, "conv-after", "k").await["title"], "Later");
    let requests = upstream.requests();
    assert!(!requests[0].is_title() && requests[1].is_title());
}

#[tokio::test]
async fn off_mode_and_passthrough_make_no_title() {
    let upstream = upstream_with_title(title_reply("x")).await;
    let mut config = test_config(&upstream.base_url());
    config.titles.order = TitleOrder::Off;
    let app = TestApp::start(config).await;
    let response = chat(&app, &first_turn("hello"), "conv-off", "k").await;
    assert!(response.headers().get("x-title-url").is_none());
    read_all(response).await;
    let app2 = TestApp::start(test_config(&upstream.base_url())).await;
    let response = app2.chat("passthrough", &first_turn("hello there")).await;
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        conversation.starts_with("conv_") && conversation.len() == 21,
        "{conversation}"
    );
    read_all(response).await;
    assert!(titles_of(&upstream).is_empty());
}

#[tokio::test]
async fn title_failures_leave_the_answer_intact_and_record_why() {
    // The cut comes once the title has streamed its first words (seen on its live stream).
    let cut = Arc::new(Notify::new());
    let cases: Vec<(&str, Reply, &str)> = vec![
        (
            "conv-500",
            Reply::json(
                500,
                r#"{"error":{"message":"title model down","type":"server_error"}}"#,
            ),
            "upstream answered 500: title model down",
        ),
        (
            "conv-cut",
            Reply::steps(vec![
                Step::Send(text_chunk("Half").into_bytes()),
                Step::Wait(cut.clone()),
                Step::Cut,
            ]),
            "title stream failed",
        ),
        (
            "conv-empty",
            Reply::sse(&[&finish_chunk("stop"), DONE]),
            "titler produced no text",
        ),
        (
            "conv-quotes",
            Reply::sse(&[&text_chunk("\"\"  ''"), DONE]),
            "titler produced no text",
        ),
        ("conv-slow", Reply::Hang, "title request timed out after 1s"),
        (
            "conv-error-event",
            Reply::sse(&["data: {\"error\":{\"message\":\"quota exceeded\"}}\n\n"]),
            "quota exceeded",
        ),
    ];
    for (conversation, reply, reason) in cases {
        let upstream = upstream_with_title(reply).await;
        let mut config = test_config(&upstream.base_url());
        // Only the hanging case may time out, whatever the machine's load: a long timeout for
        // the others, and for it a short one (it never answers, so any bound gives the outcome).
        config.titles.timeout = if conversation == "conv-slow" {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(30)
        };
        let app = TestApp::start(config).await;
        let response = chat(&app, &first_turn("Do the thing"), conversation, "k").await;
        if conversation == "conv-cut" {
            let mut live = app
                .get("/titles/conv-cut/stream")
                .bearer_auth("k")
                .send()
                .await
                .unwrap();
            live.chunk().await.unwrap();
            cut.notify_one();
        }
        assert_eq!(response.status(), 200, "{conversation}");
        let text = read_all(response).await;
        assert!(
            text.starts_with(&text_chunk("Hello")) && text.ends_with(DONE),
            "{conversation}: answer intact"
        );
        let record = settled(&app, conversation, "k").await;
        assert_eq!(record["status"], "failed", "{conversation}");
        let error = record["error"].as_str().unwrap();
        assert!(error.contains(reason), "{conversation}: {error}");
        assert_eq!(record["title"], Value::Null);
    }
}

#[tokio::test]
async fn no_user_text_means_no_title_request() {
    let upstream = upstream_with_title(title_reply("never")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let body = json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "<environment_context><cwd>/w</cwd></environment_context>"}
    ]});
    read_all(chat(&app, &body, "conv-none", "k").await).await;
    let record = settled(&app, "conv-none", "k").await;
    assert_eq!(
        (record["status"].as_str(), record["error"].as_str()),
        (Some("failed"), Some("no input to title from"))
    );
    assert!(titles_of(&upstream).is_empty());
}

#[tokio::test]
async fn an_upstream_401_rereads_the_key_file_and_retries_once() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        if r.header("authorization") != Some("Bearer new-key") {
            return Reply::json(
                401,
                r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#,
            );
        }
        if r.is_title() {
            title_reply("Rotated")
        } else {
            main_reply()
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "old-key\n").unwrap();
    let mut config = test_config(&upstream.base_url());
    config.upstream.api_key_file = Some(key_file.clone());
    let app = TestApp::start(config).await;
    // The secret is rotated after start-up.
    std::fs::write(&key_file, "new-key\n").unwrap();
    read_all(chat(&app, &first_turn("Rotate"), "conv-401", "client").await).await;
    assert_eq!(
        settled(&app, "conv-401", "client").await["title"],
        "Rotated"
    );
    let titles: Vec<Option<String>> = titles_of(&upstream)
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        titles,
        [
            Some("Bearer old-key".to_owned()),
            Some("Bearer new-key".to_owned())
        ]
    );
}

#[tokio::test]
async fn live_stream_serves_early_and_late_subscribers() {
    let (title, release) = held_title(&["Cache"], &[" eviction bug"]);
    let upstream = upstream_with_title(title).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    read_all(
        chat(
            &app,
            &first_turn("Why are entries evicted?"),
            "conv-live",
            "k",
        )
        .await,
    )
    .await;

    // Early subscriber: joins while the title is still streaming.
    let mut early = app
        .get("/titles/conv-live/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    assert_eq!(early.headers()["content-type"], "text/event-stream");
    let first = String::from_utf8(early.chunk().await.unwrap().unwrap().to_vec()).unwrap();
    assert_eq!(first, "event: delta\ndata: {\"text\":\"Cache\"}\n\n");
    release.notify_one();
    let mut rest = String::new();
    while let Some(chunk) = early.chunk().await.unwrap() {
        rest.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(
        rest,
        "event: delta\ndata: {\"text\":\" eviction bug\"}\n\nevent: done\ndata: {\"title\":\"Cache eviction bug\"}\n\n"
    );

    // Late subscriber: the title is finished, so `done` comes at once.
    settled(&app, "conv-live", "k").await;
    let late = read_all(
        app.get("/titles/conv-live/stream")
            .bearer_auth("k")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        late,
        "event: done\ndata: {\"title\":\"Cache eviction bug\"}\n\n"
    );

    let unknown = app
        .get("/titles/nope/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn a_subscriber_joining_mid_stream_gets_what_was_streamed_first() {
    let (title, release) = held_title(&["Part one", ","], &[" part two"]);
    let upstream = upstream_with_title(title).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    read_all(chat(&app, &first_turn("Two parts"), "conv-mid", "k").await).await;
    // A first subscriber proves both early deltas have been published...
    let mut first = app
        .get("/titles/conv-mid/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while seen.matches("event: delta").count() < 2 {
        seen.push_str(std::str::from_utf8(&first.chunk().await.unwrap().unwrap()).unwrap());
    }
    // ...so a subscriber joining now is late: its first read already holds both.
    let mut late = app
        .get("/titles/conv-mid/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    let head = String::from_utf8(late.chunk().await.unwrap().unwrap().to_vec()).unwrap();
    assert_eq!(
        head,
        "event: delta\ndata: {\"text\":\"Part one\"}\n\nevent: delta\ndata: {\"text\":\",\"}\n\n"
    );
    release.notify_one();
    let rest = read_all(late).await;
    assert_eq!(
        rest,
        "event: delta\ndata: {\"text\":\" part two\"}\n\nevent: done\ndata: {\"title\":\"Part one, part two\"}\n\n"
    );
    drop(first);
}

#[tokio::test]
async fn titles_are_scoped_to_the_caller_and_admin_sees_all() {
    let upstream = upstream_with_title(title_reply("Mine")).await;
    let mut config = test_config(&upstream.base_url());
    config.auth.admin_token = Some("root-token".into());
    let app = TestApp::start(config).await;
    read_all(
        chat(
            &app,
            &first_turn("Alice's question"),
            "conv-alice",
            "alice-key",
        )
        .await,
    )
    .await;
    read_all(chat(&app, &first_turn("Bob's question"), "conv-bob", "bob-key").await).await;
    settled(&app, "conv-alice", "alice-key").await;
    settled(&app, "conv-bob", "bob-key").await;

    assert_eq!(
        app.get("/titles/conv-alice")
            .bearer_auth("bob-key")
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        app.get("/titles/conv-alice/stream")
            .bearer_auth("bob-key")
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        app.get("/titles/conv-alice").send().await.unwrap().status(),
        401,
        "no credential, no titles API (issue 8 item 5)"
    );
    let ids = |list: Value| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let bob: Value = app.get_json("/titles", "bob-key").await;
    assert_eq!(ids(bob), ["conv-bob"]);
    let admin: Value = app.get_json("/titles", "root-token").await;
    assert_eq!(ids(admin), ["conv-bob", "conv-alice"], "newest first");
    assert_eq!(
        app.get("/titles/conv-alice")
            .bearer_auth("root-token")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn listing_paginates_newest_first_with_a_cursor() {
    let upstream = upstream_with_title(title_reply("T")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for i in 0..5 {
        let id = format!("conv-page-{i}");
        read_all(chat(&app, &first_turn(&format!("question {i}")), &id, "k").await).await;
        settled(&app, &id, "k").await;
    }
    let page: Value = app.get_json("/titles?limit=2", "k").await;
    let ids = |page: &Value| {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&page), ["conv-page-4", "conv-page-3"]);
    assert_eq!(page["has_more"], true);
    let cursor = page["next_before"].as_str().unwrap();
    let next: Value = app
        .get_json(&format!("/titles?limit=2&before={cursor}"), "k")
        .await;
    assert_eq!(ids(&next), ["conv-page-2", "conv-page-1"]);
    let last: Value = app
        .get(&format!(
            "/titles?limit=2&before={}",
            next["next_before"].as_str().unwrap()
        ))
        .bearer_auth("k")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&last), ["conv-page-0"]);
    assert_eq!(last["has_more"], false);
    let (status, code, _) = crate::support::error_of(
        app.get("/titles?limit=zero")
            .bearer_auth("k")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));
}

#[tokio::test]
async fn a_listing_limit_over_the_maximum_is_refused_naming_the_bound() {
    let upstream = upstream_with_title(title_reply("T")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for limit in ["501", "100000"] {
        let (status, code, message) = crate::support::error_of(
            app.get(&format!("/titles?limit={limit}"))
                .bearer_auth("k")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((status, code.as_str()), (400, "invalid_query"), "{limit}");
        assert!(message.contains("500"), "names the bound: {message}");
    }
    let page: Value = app.get_json("/titles?limit=500", "k").await;
    assert_eq!(page["has_more"], false, "{page}");
}

#[tokio::test]
async fn titles_survive_a_restart_with_sqlite() {
    let upstream = upstream_with_title(title_reply("Persistent title")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&upstream.base_url());
    config.titles.store = StoreUrl::Sqlite(dir.path().join("titles.db"));
    let mut app = TestApp::start(config.clone()).await;
    read_all(chat(&app, &first_turn("Keep this"), "conv-keep", "k").await).await;
    settled(&app, "conv-keep", "k").await;
    app.stop().await.unwrap();
    drop(app);

    let restarted = TestApp::start(config).await;
    let list: Value = restarted.get_json("/titles", "k").await;
    assert_eq!(list["data"][0]["id"], "conv-keep");
    assert_eq!(list["data"][0]["title"], "Persistent title");
    // Still known after the restart: a retried first turn is not titled again.
    read_all(chat(&restarted, &first_turn("Keep this"), "conv-keep", "k").await).await;
    assert_eq!(titles_of(&upstream).len(), 1);
}

#[tokio::test]
async fn shutdown_waits_for_a_running_title_and_records_it() {
    let (title, release) = held_title(&["Graceful"], &[]);
    let upstream = upstream_with_title(title).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&upstream.base_url());
    config.titles.store = StoreUrl::Sqlite(dir.path().join("t.db"));
    let mut app = TestApp::start(config.clone()).await;
    read_all(chat(&app, &first_turn("Shut down gently"), "conv-grace", "k").await).await;
    app.trigger_shutdown();
    // The title is let finish only once the drain has begun (readiness is gone).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while app
        .get("/readyz")
        .send()
        .await
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(tokio::time::Instant::now() < deadline, "shutdown not seen");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    release.notify_one();
    let server = app.server.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let restarted = TestApp::start(config).await;
    let record = settled(&restarted, "conv-grace", "k").await;
    assert_eq!(record["title"], "Graceful");
}

#[tokio::test]
async fn a_title_still_running_when_the_grace_ends_is_recorded_as_cut_short() {
    let title = Reply::steps(vec![
        Step::Send(text_chunk("Never").into_bytes()),
        Step::Sleep(Duration::from_secs(60)),
    ]);
    let upstream = upstream_with_title(title).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&upstream.base_url());
    config.titles.store = StoreUrl::Sqlite(dir.path().join("t.db"));
    config.titles.timeout = Duration::from_secs(60);
    config.shutdown_grace = Duration::from_secs(1);
    let mut app = TestApp::start(config.clone()).await;
    read_all(chat(&app, &first_turn("Too slow"), "conv-cut-short", "k").await).await;
    let started = std::time::Instant::now();
    app.stop().await.unwrap();
    // The title would run 60 s: stopping well before is the grace at work.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "shutdown is bounded by the grace period"
    );
    let restarted = TestApp::start(config).await;
    let record = settled(&restarted, "conv-cut-short", "k").await;
    assert_eq!(record["status"], "failed");
    assert_eq!(
        record["error"],
        "the proxy shut down before the title finished"
    );
}

/// opencode's own title request, as opencode 1.18 sends it.
fn client_title_request(text: &str) -> Value {
    json!({"model": "mock-model", "max_tokens": 32000, "stream": true, "stream_options": {"include_usage": true},
    "messages": [
        {"role": "system", "content": TITLE_PROMPT},
        {"role": "user", "content": "Generate a title for this conversation:\n"},
        {"role": "user", "content": text}
    ]})
}

async fn opencode_client(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post("/v1/chat/completions")
        .header(
            "user-agent",
            "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
        )
        .header("x-session-id", "ses_0123abc")
        .bearer_auth("oc-key")
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_clients_own_title_request_is_forwarded_untouched_and_becomes_the_title() {
    let title_stream = [
        text_chunk("Greeting"),
        text_chunk(" check-in"),
        finish_chunk("stop"),
        DONE.to_owned(),
    ];
    let upstream = upstream_with_title(Reply::sse(
        &title_stream.iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;

    let title_request = client_title_request("\"say hello\"");
    let response = opencode_client(&app, &title_request).await;
    assert_eq!(response.headers()["x-title-url"], "/titles/ses_0123abc");
    assert_eq!(
        read_all(response).await,
        title_stream.concat(),
        "the client's title answer is untouched"
    );
    let record = settled(&app, "ses_0123abc", "oc-key").await;
    assert_eq!(
        (record["status"].as_str(), record["title"].as_str()),
        (Some("done"), Some("Greeting check-in"))
    );

    // The first turn itself follows; it is not titled a second time.
    let main = opencode_client(&app, &first_turn("say hello")).await;
    assert!(main.headers().get("x-title-url").is_none());
    read_all(main).await;
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2, "one title request, one main request");
    assert_eq!(
        requests[0].body.as_ref(),
        serde_json::to_vec(&title_request).unwrap().as_slice()
    );
    assert!(!requests[1].is_title());
}

#[tokio::test]
async fn a_refused_client_title_request_records_why() {
    let upstream =
        upstream_with_title(Reply::json(429, r#"{"error":{"message":"slow down"}}"#)).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let response = opencode_client(&app, &client_title_request("hi")).await;
    assert_eq!(response.status(), 429);
    assert_eq!(
        response.text().await.unwrap(),
        r#"{"error":{"message":"slow down"}}"#
    );
    let record = settled(&app, "ses_0123abc", "oc-key").await;
    assert_eq!(
        (record["status"].as_str(), record["error"].as_str()),
        (Some("failed"), Some("upstream answered 429"))
    );
}

#[tokio::test]
async fn when_the_first_turn_wins_the_race_the_clients_title_request_is_only_forwarded() {
    let (held, release) = held_title(&["Proxy"], &[" title"]);
    // The proxy's own title request carries the reference's thread headers; the client's does not.
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        match (r.is_title(), r.header("thread-id").is_some()) {
            (true, true) => held.clone(),
            (true, false) => title_reply("Client title"),
            (false, _) => main_reply(),
        }
    })
    .await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    read_all(opencode_client(&app, &first_turn("say hello")).await).await;
    let late = opencode_client(&app, &client_title_request("\"say hello\"")).await;
    assert!(
        late.headers().get("x-title-url").is_none(),
        "already being titled"
    );
    assert!(
        read_all(late).await.contains("Client title"),
        "the client still gets its own answer"
    );
    release.notify_one();
    assert_eq!(
        settled(&app, "ses_0123abc", "oc-key").await["title"],
        "Proxy title"
    );
}

/// Kilo (an opencode fork) sends its own title request under `x-session-id: title-<session>`:
/// it belongs to that session, which keeps one title record.
#[tokio::test]
async fn kilo_s_title_request_under_title_prefixed_session_is_that_session_s() {
    let upstream = upstream_with_title(title_reply("Greeting")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let send = |session: &'static str, body: Value| {
        let app = &app;
        async move {
            let response = app
                .post("/v1/chat/completions")
                .header(
                    "user-agent",
                    "Kilo-Code/7.7.7 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
                )
                .header("x-session-id", session)
                .bearer_auth("kilo-key")
                .json(&body)
                .send()
                .await
                .unwrap();
            read_all(response).await
        }
    };
    send("ses_kilo1", first_turn("say hello")).await;
    settled(&app, "ses_kilo1", "kilo-key").await;
    send("title-ses_kilo1", client_title_request("\"say hello\"")).await;
    let list = app.get_json("/titles", "kilo-key").await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ses_kilo1"], "{list}");
}
