//! Titles across processes: two proxies sharing one Redis (one title per conversation, read and
//! streamed from either), a Redis that dies and comes back, two processes on one SQLite file,
//! and readiness when the SQLite directory disappears.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use crate::support::redis::{PrivateRedis, fresh_prefix, shared_url, use_redis};
use crate::support::sse::{DONE, read_all, text_chunk};
use crate::support::{Reply, Step, TestApp, error_of, test_config};
use crate::titles::{
    chat, first_turn, held_title, settled, title_reply, titles_of, upstream_with_title,
};
use std::sync::Arc;

use harness_proxy::config::StoreUrl;

/// Reads SSE chunks until `done` (or `error`) arrives: (concatenated delta texts, final event).
async fn follow_to_end(mut response: reqwest::Response) -> (String, String) {
    let mut raw = String::new();
    while !raw.contains("event: done") && !raw.contains("event: error") {
        let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), response.chunk())
            .await
            .expect("the title stream moves within 20 s")
            .unwrap()
        else {
            break;
        };
        raw.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    parse_events(&raw)
}

fn parse_events(raw: &str) -> (String, String) {
    let mut text = String::new();
    let mut last = String::new();
    for event in raw.split("\n\n").filter(|e| !e.is_empty()) {
        let name = event.lines().next().unwrap_or_default();
        let data: Value = serde_json::from_str(
            event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or("null"),
        )
        .unwrap();
        match name {
            "event: delta" => text.push_str(data["text"].as_str().unwrap()),
            _ => last = event.to_owned(),
        }
    }
    (text, last)
}

/// A title that streams `Login`, ` bug` once `first` is told, then ` fix` once `second` is.
fn two_step_title() -> (Reply, Arc<Notify>, Arc<Notify>) {
    let first = Arc::new(Notify::new());
    let second = Arc::new(Notify::new());
    let steps = vec![
        Step::Wait(first.clone()),
        Step::Send(text_chunk("Login").into_bytes()),
        Step::Send(text_chunk(" bug").into_bytes()),
        Step::Wait(second.clone()),
        Step::Send(text_chunk(" fix").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ];
    (Reply::steps(steps), first, second)
}

#[tokio::test]
async fn a_title_run_by_replica_a_is_read_and_streamed_through_replica_b() {
    let Some(url) = shared_url("two-replica streaming").await else {
        return;
    };
    let (title, first, second) = two_step_title();
    let upstream = upstream_with_title(title).await;
    let mut config = test_config(&upstream.base_url());
    let prefix = fresh_prefix(&url);
    use_redis(&mut config, &url, &prefix.name);
    let a = TestApp::start(config.clone()).await;
    let b = TestApp::start(config).await;

    let answer = chat(&a, &first_turn("Fix the login bug"), "conv-ab", "k").await;
    assert_eq!(answer.headers()["x-title-url"], "/titles/conv-ab");
    read_all(answer).await;
    let pending: Value = b.get_json("/titles/conv-ab", "k").await;
    assert_eq!(pending["status"], "pending", "B reads A's claim: {pending}");

    // Early subscriber on B: subscribed (headers back) before A's title streamed anything.
    let early = b
        .get("/titles/conv-ab/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    assert_eq!(early.headers()["content-type"], "text/event-stream");
    first.notify_one();
    let early = tokio::spawn(follow_to_end(early));

    // Late subscriber on B, once "Login bug" is on the record: it gets that text first.
    let mut seen = String::new();
    for _ in 0..400 {
        let mut probe = b
            .get("/titles/conv-ab/stream")
            .bearer_auth("k")
            .send()
            .await
            .unwrap();
        let head = tokio::time::timeout(Duration::from_secs(20), probe.chunk())
            .await
            .expect("a first event")
            .unwrap()
            .unwrap_or_default();
        seen = String::from_utf8(head.to_vec()).unwrap();
        if seen.contains("Login bug") {
            second.notify_one();
            let (rest, end) = follow_to_end(probe).await;
            assert_eq!(format!("{}{rest}", parse_events(&seen).0), "Login bug fix");
            assert_eq!(end, "event: done\ndata: {\"title\":\"Login bug fix\"}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        seen.contains("Login bug"),
        "late subscriber's first read: {seen}"
    );
    assert_eq!(seen, "event: delta\ndata: {\"text\":\"Login bug\"}\n\n");

    let (text, end) = early.await.unwrap();
    assert_eq!(text, "Login bug fix");
    assert_eq!(end, "event: done\ndata: {\"title\":\"Login bug fix\"}");
    let record = settled(&b, "conv-ab", "k").await;
    assert_eq!(record["title"], "Login bug fix");
    let listed: Value = b.get_json("/titles", "k").await;
    assert_eq!(listed["data"][0]["id"], "conv-ab");
    assert_eq!(titles_of(&upstream).len(), 1);
}

#[tokio::test]
async fn the_same_first_turn_sent_to_two_replicas_at_once_makes_one_title_request() {
    let Some(url) = shared_url("two-replica claim").await else {
        return;
    };
    let upstream = upstream_with_title(title_reply("Only once")).await;
    let mut config = test_config(&upstream.base_url());
    let prefix = fresh_prefix(&url);
    use_redis(&mut config, &url, &prefix.name);
    let a = TestApp::start(config.clone()).await;
    let b = TestApp::start(config).await;
    for round in 0..5 {
        let id = format!("conv-race-{round}");
        let body = first_turn("Race me");
        let (ra, rb) = tokio::join!(chat(&a, &body, &id, "k"), chat(&b, &body, &id, "k"));
        assert_eq!((ra.status().as_u16(), rb.status().as_u16()), (200, 200));
        let (ra, rb) = tokio::join!(read_all(ra), read_all(rb));
        assert!(ra.contains("Hello") && rb.contains("Hello"));
        assert_eq!(settled(&a, &id, "k").await["title"], "Only once");
    }
    assert_eq!(
        titles_of(&upstream).len(),
        5,
        "one title request per conversation"
    );
}

#[tokio::test]
async fn redis_dying_mid_title_loses_no_finished_title_and_never_breaks_chat() {
    let Some(mut redis) = PrivateRedis::start("redis restart").await else {
        return;
    };
    let (title, release) = held_title(&["Survives"], &[" the outage"]);
    let upstream = crate::support::FakeUpstream::start(move |r: &crate::support::Recorded, _| {
        let first = String::from_utf8_lossy(&r.body).contains("Finished before");
        match (r.is_title(), first) {
            (true, true) => title_reply("Finished before"),
            (true, false) => title.clone(),
            (false, _) => crate::titles::main_reply(),
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    use_redis(&mut config, &redis.url(), "hp");
    let app = TestApp::start(config).await;

    read_all(chat(&app, &first_turn("Finished before"), "conv-before", "k").await).await;
    assert_eq!(
        settled(&app, "conv-before", "k").await["title"],
        "Finished before"
    );
    // A listing writes the finished titles still gathering for their batch: this one is stored.
    let listed: Value = app.get_json("/titles", "k").await;
    assert_eq!(listed["data"][0]["id"], "conv-before", "{listed}");
    read_all(chat(&app, &first_turn("During"), "conv-during", "k").await).await;

    redis.kill();
    // Chat keeps serving while Redis is down (this turn simply gets no title).
    let answer = chat(&app, &first_turn("No store"), "conv-untitled", "k").await;
    assert_eq!(answer.status(), 200);
    assert!(read_all(answer).await.contains("Hello"));
    release.notify_one();
    // The held title finishes into the outbox; the store is named in a 503.
    let mut queued = Value::Null;
    for _ in 0..400 {
        let ready = app.get("/readyz").send().await.unwrap();
        assert_eq!(
            ready.status(),
            200,
            "a down Redis keeps the replica in rotation"
        );
        queued = ready.json().await.unwrap();
        if queued["title_store"]["queued"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(queued["title_store"]["state"], "unreachable", "{queued}");
    assert_eq!(queued["title_store"]["queued"], 1, "{queued}");
    let (status, code, message) =
        error_of(app.get("/titles").bearer_auth("k").send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (503, "store_unavailable"));
    assert!(message.contains(&redis.url()), "{message}");

    redis.restart().await;
    let during = settled(&app, "conv-during", "k").await;
    assert_eq!(during["title"], "Survives the outage");
    let before: Value = app.get_json("/titles/conv-before", "k").await;
    assert_eq!(before["title"], "Finished before");
    let untitled = app
        .get("/titles/conv-untitled")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    assert_eq!(untitled.status(), 404);
}

#[tokio::test]
async fn a_second_process_on_the_same_sqlite_file_leaves_the_first_ones_titles_alone() {
    let (title, release) = held_title(&["Shared"], &[" file"]);
    let upstream = upstream_with_title(title).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&upstream.base_url());
    config.titles.store = StoreUrl::Sqlite(dir.path().join("t.db"));
    let first = TestApp::start(config.clone()).await;
    read_all(chat(&first, &first_turn("One file"), "conv-file", "k").await).await;

    // The second process's start-up recovery runs while the first one's title is running.
    let second = TestApp::start(config).await;
    let seen: Value = second.get_json("/titles/conv-file", "k").await;
    assert_eq!(seen["status"], "pending", "{seen}");
    // Its stream follows the record the first process writes.
    let follower = second
        .get("/titles/conv-file/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    release.notify_one();
    let (text, end) = follow_to_end(follower).await;
    assert_eq!(text, "Shared file");
    assert_eq!(end, "event: done\ndata: {\"title\":\"Shared file\"}");
    assert_eq!(
        settled(&second, "conv-file", "k").await["title"],
        "Shared file"
    );
    // A retried first turn through the second process is not titled again.
    read_all(chat(&second, &first_turn("One file"), "conv-file", "k").await).await;
    assert_eq!(titles_of(&upstream).len(), 1);
}

#[tokio::test]
async fn readyz_turns_503_when_the_sqlite_directory_is_removed() {
    let upstream = upstream_with_title(title_reply("x")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&upstream.base_url());
    config.titles.store = StoreUrl::Sqlite(dir.path().join("data/t.db"));
    let app = TestApp::start(config).await;
    let ready = app.get("/readyz").send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["title_store"]["state"], "ok", "{body}");

    std::fs::remove_dir_all(dir.path().join("data")).unwrap();
    let lost = app.get("/readyz").send().await.unwrap();
    assert_eq!(lost.status(), 503);
    let body: Value = lost.json().await.unwrap();
    assert_eq!(body["status"], "title store unreachable");
    assert_eq!(body["title_store"]["state"], "unreachable", "{body}");
}

#[tokio::test]
async fn a_proxy_started_while_redis_is_down_serves_chat_and_titles_once_it_is_back() {
    let Some(mut redis) = PrivateRedis::start("redis down at start-up").await else {
        return;
    };
    let upstream = upstream_with_title(title_reply("Back again")).await;
    let mut config = test_config(&upstream.base_url());
    use_redis(&mut config, &redis.url(), "hp");
    redis.kill();
    let app = TestApp::start(config).await;
    let answer = chat(&app, &first_turn("Anyone there?"), "conv-down", "k").await;
    assert_eq!(answer.status(), 200);
    assert!(
        !answer.headers().contains_key("x-title-url"),
        "no claim, no title"
    );
    assert!(read_all(answer).await.contains("Hello"));

    redis.restart().await;
    let mut titled = false;
    for n in 0..400 {
        let id = format!("conv-up-{n}");
        let answer = chat(&app, &first_turn("Anyone there?"), &id, "k").await;
        if answer.headers().contains_key("x-title-url") {
            read_all(answer).await;
            assert_eq!(settled(&app, &id, "k").await["title"], "Back again");
            titled = true;
            break;
        }
        read_all(answer).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(titled, "titles resume once Redis answers");
}

#[tokio::test]
async fn a_claim_given_up_on_while_redis_hangs_ends_failed_and_its_stream_ends() {
    let Some(redis) = PrivateRedis::start("redis hung mid-claim").await else {
        return;
    };
    let upstream = upstream_with_title(title_reply("Never asked")).await;
    let mut config = test_config(&upstream.base_url());
    use_redis(&mut config, &redis.url(), "hp");
    let app = TestApp::start(config).await;

    // A running service: its store connection is up and a conversation titled.
    read_all(
        chat(
            &app,
            &first_turn("Before the hang"),
            "conv-before-hang",
            "k",
        )
        .await,
    )
    .await;
    assert_eq!(
        settled(&app, "conv-before-hang", "k").await["status"],
        "done"
    );
    // Redis hangs: the first turn's claim is given up after its timeout, the answer is served.
    redis.pause();
    let answer = chat(&app, &first_turn("While Redis hangs"), "conv-hung", "k").await;
    assert_eq!(answer.status(), 200);
    assert!(read_all(answer).await.contains("Hello"));
    // Redis comes back and runs the queued claim: the pending record it writes is nobody's task.
    redis.resume();
    let record = settled(&app, "conv-hung", "k").await;
    assert_eq!(record["status"], "failed", "{record}");
    assert!(
        record["error"]
            .as_str()
            .unwrap_or_default()
            .contains("claim"),
        "{record}"
    );
    // Its live stream ends (with the failure) instead of hanging.
    let stream = app
        .get("/titles/conv-hung/stream")
        .bearer_auth("k")
        .send()
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(10), read_all(stream))
        .await
        .expect("the stream ends");
    assert!(text.contains("error"), "{text}");
}

#[tokio::test]
async fn readyz_tells_a_full_or_read_only_redis_from_an_unreachable_one() {
    let Some(mut redis) = PrivateRedis::start("redis full").await else {
        return;
    };
    let upstream = upstream_with_title(title_reply("T")).await;
    let mut config = test_config(&upstream.base_url());
    use_redis(&mut config, &redis.url(), "hp");
    let app = TestApp::start(config).await;
    let state_of = |app: &TestApp| {
        let request = app.get("/readyz");
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            (
                status,
                body["title_store"]["state"].as_str().unwrap().to_owned(),
                body,
            )
        }
    };
    assert_eq!(state_of(&app).await.1, "ok");
    let admin = redis::Client::open(redis.url()).unwrap();
    let mut conn = admin.get_multiplexed_async_connection().await.unwrap();
    let config_set = |key: &'static str, value: &'static str| {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("SET").arg(key).arg(value);
        cmd
    };
    // Full: every write is refused with `-OOM`.
    let () = config_set("maxmemory", "1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let (status, state, body) = state_of(&app).await;
    assert_eq!(state, "full", "{body}");
    assert!(
        body["title_store"]["error"]
            .as_str()
            .unwrap()
            .contains("OOM"),
        "{body}"
    );
    assert_eq!(
        status, 200,
        "a shared store's fault keeps the replica in rotation"
    );
    let () = config_set("maxmemory", "0")
        .query_async(&mut conn)
        .await
        .unwrap();
    // Read-only: a replica of a master that is not there refuses writes with `-READONLY`.
    let () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg("1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let (_, state, body) = state_of(&app).await;
    assert_eq!(state, "read_only", "{body}");
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(state_of(&app).await.1, "ok");
    redis.kill();
    let (_, state, body) = state_of(&app).await;
    assert_eq!(state, "unreachable", "{body}");
}
