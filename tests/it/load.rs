//! Load and its observability: gauges of what is in flight, bounded title subscribers, access-log
//! outcomes that say what happened (`complete`, `upstream_error`, `shutdown`), 2,000 concurrent
//! streams, and a SIGTERM drain of 100 streams and 100 titles with nothing lost.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, Step, TestApp, chat_body, test_config};

/// A stream that sends one chunk, waits at `gate`, then ends with `[DONE]`.
fn gated(gate: &Arc<Semaphore>) -> Reply {
    Reply::steps(vec![
        Step::Send(text_chunk("first").into_bytes()),
        Step::Gate(gate.clone()),
        Step::Send(text_chunk("last").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ])
}

/// The value of an unlabelled series in a Prometheus text page.
fn metric(page: &str, name: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test]
async fn metrics_show_requests_streams_and_connections_in_flight() {
    let gate = Arc::new(Semaphore::new(0));
    let upstream = FakeUpstream::fixed(gated(&gate)).await;
    let proxy = Proxy::start(&upstream.base_url(), &[]).await;
    let metrics_url = format!("{}/metrics", proxy.base);
    let client = reqwest::Client::new();
    let streams = (0..3).map(|_| {
        client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("x-harness", "passthrough")
            .json(&chat_body(true))
            .send()
    });
    let mut streams: Vec<reqwest::Response> = join_all(streams)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for stream in &mut streams {
        stream.chunk().await.unwrap();
    }
    let page = client
        .get(&metrics_url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        metric(&page, "harness_proxy_requests_in_flight"),
        Some(3.0),
        "{page}"
    );
    assert_eq!(
        metric(&page, "harness_proxy_streams_in_flight"),
        Some(3.0),
        "{page}"
    );
    // Three streams and this request's own connection (the start-up probe's may linger).
    let open = metric(&page, "harness_proxy_connections_open").unwrap_or_default();
    assert!((4.0..=5.0).contains(&open), "{page}");

    gate.add_permits(1);
    for stream in streams {
        assert!(read_all(stream).await.ends_with(DONE));
    }
    // The gauges fall as the bodies end; poll (bounded) rather than guess when.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let page = client
            .get(&metrics_url)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let idle = metric(&page, "harness_proxy_requests_in_flight") == Some(0.0)
            && metric(&page, "harness_proxy_streams_in_flight") == Some(0.0);
        if idle {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn live_title_subscribers_beyond_the_limit_get_503() {
    let release = Arc::new(Notify::new());
    let title = Reply::steps(vec![
        Step::Send(text_chunk("Held").into_bytes()),
        Step::Wait(release.clone()),
        Step::Send(DONE.as_bytes().to_vec()),
    ]);
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            title.clone()
        } else {
            Reply::sse(&[&text_chunk("hi"), DONE])
        }
    })
    .await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_title_subscribers = 2;
    let app = TestApp::start(config).await;
    let first_turn = json!({"model": "m", "stream": true, "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Name this"}
    ]});
    let answer = app
        .post("/v1/chat/completions")
        .header("x-conversation-id", "conv-subs")
        .bearer_auth("k")
        .json(&first_turn)
        .send()
        .await
        .unwrap();
    read_all(answer).await;
    let subscribe = || app.get("/titles/conv-subs/stream").bearer_auth("k").send();
    let mut seated = Vec::new();
    for _ in 0..2 {
        let mut subscriber = subscribe().await.unwrap();
        assert_eq!(subscriber.status(), 200);
        subscriber.chunk().await.unwrap();
        seated.push(subscriber);
    }
    let refused = subscribe().await.unwrap();
    assert_eq!(refused.headers()["retry-after"], "1");
    let (status, code, _) = crate::support::error_of(refused).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));

    // A seat comes free when its subscriber leaves.
    drop(seated.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut again = loop {
        let response = subscribe().await.unwrap();
        if response.status() == 200 {
            break response;
        }
        assert!(tokio::time::Instant::now() < deadline, "no seat came free");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    again.chunk().await.unwrap();
    release.notify_one();
    assert!(read_all(again).await.contains("event: done"));
}

/// The access-log `outcome` of each request to `path`.
fn outcomes(logs: &str, path: &str) -> Vec<String> {
    logs.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["message"] == "request" && entry["path"] == path)
        .map(|entry| entry["outcome"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn access_log_outcomes_say_complete_upstream_error_and_shutdown() {
    let never = Arc::new(Semaphore::new(0));
    let held = gated(&never);
    let cut_now = Arc::new(Notify::new());
    let cut_step = cut_now.clone();
    let upstream = FakeUpstream::start(move |r: &Recorded, _| match r.path.as_str() {
        "/v1/models" => Reply::json(200, r#"{"object":"list","data":[]}"#),
        _ if r.body.windows(3).any(|w| w == b"cut") => Reply::steps(vec![
            Step::Send(text_chunk("partial").into_bytes()),
            Step::Wait(cut_step.clone()),
            Step::Cut,
        ]),
        _ => held.clone(),
    })
    .await;
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            ("HARNESS_PROXY__SHUTDOWN_GRACE", "1s"),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let models = client
        .get(format!("{}/v1/models", proxy.base))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    models.bytes().await.unwrap();

    let chat = |content: &str| {
        client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("x-harness", "passthrough")
            .json(&json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": content}]}))
            .send()
    };
    let mut cut = chat("cut").await.unwrap();
    cut.chunk().await.unwrap();
    cut_now.notify_one();
    let cut = read_all(cut).await;
    assert!(cut.contains("upstream_interrupted"), "{cut}");

    // A stream still open when the grace ends is cut by the shutdown.
    let mut open = chat("hold").await.unwrap();
    open.chunk().await.unwrap();
    let (exited_ok, logs) = tokio::task::spawn_blocking(move || proxy.terminate())
        .await
        .unwrap();
    drop(open);
    assert!(exited_ok, "{logs}");
    assert_eq!(outcomes(&logs, "/v1/models"), ["complete"], "{logs}");
    let mut chats = outcomes(&logs, "/v1/chat/completions");
    chats.sort();
    assert_eq!(chats, ["shutdown", "upstream_error"], "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_concurrent_streams_all_complete() {
    const STREAMS: usize = 2000;
    const WAVE: usize = 200;
    let gate = Arc::new(Semaphore::new(0));
    let upstream = FakeUpstream::fixed(gated(&gate)).await;
    let mut config = test_config(&upstream.base_url());
    config.limits.max_concurrent_requests = STREAMS;
    // 2,000 upstream connections opened at once on a busy machine: not what is tested here.
    config.upstream.connect_timeout = Duration::from_secs(60);
    let app = Arc::new(TestApp::start(config).await);
    // Every stream has its first chunk before any is let finish: all 2,000 are open at once. They
    // open in waves, so a burst of connects does not overflow a listen backlog (not the promise).
    let mut opened = Vec::new();
    for _ in 0..STREAMS / WAVE {
        let wave = join_all((0..WAVE).map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut response = app.chat("passthrough", &chat_body(true)).await;
                assert_eq!(response.status(), 200);
                response.chunk().await.unwrap();
                response
            })
        }))
        .await;
        opened.extend(wave);
    }
    assert_eq!(upstream.count(), STREAMS);
    gate.add_permits(1);
    let finished = join_all(opened.into_iter().map(|response| {
        tokio::spawn(async move { read_all(response.unwrap()).await.ends_with(DONE) })
    }))
    .await;
    let complete = finished
        .into_iter()
        .filter(|f| *f.as_ref().unwrap())
        .count();
    assert_eq!(complete, STREAMS, "streams lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_100_streams_and_100_titles_with_nothing_lost() {
    const N: usize = 100;
    let gate = Arc::new(Semaphore::new(0));
    let held_stream = gated(&gate);
    let held_title = Reply::steps(vec![
        Step::Send(text_chunk("Drained").into_bytes()),
        Step::Gate(gate.clone()),
        Step::Send(text_chunk(" title").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ]);
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            held_title.clone()
        } else {
            held_stream.clone()
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("titles.db").display());
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__TITLES__STORE", &store),
            ("HARNESS_PROXY__SHUTDOWN_GRACE", "60s"),
            ("HARNESS_PROXY__LOG_LEVEL", "warn"),
            // All N titles in flight at once, past the default 64 slots.
            ("HARNESS_PROXY__TITLES__MAX_IN_FLIGHT", "100"),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let opened = join_all((0..N).map(|i| {
        let request = client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("x-conversation-id", format!("conv-{i}"))
            .bearer_auth("k")
            .json(&json!({"model": "m", "stream": true, "messages": [
                {"role": "system", "content": "You are an agent."},
                {"role": "user", "content": format!("task {i}")}
            ]}));
        tokio::spawn(async move {
            let mut response = request.send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.chunk().await.unwrap();
            response
        })
    }))
    .await;
    // Every stream and every title request is in flight.
    upstream.wait_for_requests(2 * N).await;

    let base = proxy.base.clone();
    let stopping = tokio::task::spawn_blocking(move || proxy.terminate());
    // Let everything finish only once the drain has begun: poll readiness on a fresh connection
    // until it is no longer 200 (503 draining, or refused once the listener is closed), bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ready = reqwest::Client::new()
            .get(format!("{base}/readyz"))
            .send()
            .await;
        if !ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "SIGTERM not seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gate.add_permits(1);
    let finished = join_all(opened.into_iter().map(|response| {
        tokio::spawn(async move { read_all(response.unwrap()).await.ends_with(DONE) })
    }))
    .await;
    let complete = finished
        .into_iter()
        .filter(|f| *f.as_ref().unwrap())
        .count();
    let (exited_ok, logs) = stopping.await.unwrap();
    assert!(exited_ok, "{logs}");
    assert_eq!(complete, N, "streams lost");

    let mut config = test_config(&upstream.base_url());
    config.titles.store = harness_proxy::config::StoreUrl::Sqlite(dir.path().join("titles.db"));
    let restarted = TestApp::start(config).await;
    let list: Value = restarted.get_json("/titles?limit=500", "k").await;
    let done: Vec<&Value> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "done" && r["title"] == "Drained title")
        .collect();
    assert_eq!(done.len(), N, "titles lost: {list}");
}
