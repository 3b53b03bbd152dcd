//! Graceful shutdown: stop accepting, finish in-flight streams, then return.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::support::sse::{DONE, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, Step, TestApp, chat_body, test_config};

#[tokio::test]
async fn in_flight_stream_finishes_after_shutdown_is_requested() {
    let release = Arc::new(Notify::new());
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Send(text_chunk("before").into_bytes()),
        Step::Wait(release.clone()),
        Step::Send(text_chunk("after").into_bytes()),
        Step::Send(DONE.as_bytes().to_vec()),
    ]))
    .await;
    let mut app = TestApp::start(test_config(&upstream.base_url())).await;
    let mut response = app.chat("passthrough", &chat_body(true)).await;
    let first = response.chunk().await.unwrap().unwrap();
    assert_eq!(first.as_ref(), text_chunk("before").as_bytes());

    app.trigger_shutdown();
    // Readiness flips while draining; a new connection is refused once the listener is closed.
    let mut refused = false;
    for _ in 0..100 {
        let fresh = reqwest::Client::new().get(app.url("/healthz")).send().await;
        if fresh.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "no new connections while draining");

    release.notify_one();
    let rest = read_all(response).await;
    assert_eq!(rest, format!("{}{DONE}", text_chunk("after")));
    let server = app.server.take().unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("server stops")
        .unwrap();
    assert!(result.is_ok());
}

#[tokio::test]
async fn grace_period_bounds_a_stream_that_never_ends() {
    let upstream = FakeUpstream::fixed(Reply::steps(vec![
        Step::Send(text_chunk("x").into_bytes()),
        Step::Sleep(Duration::from_secs(60)),
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.shutdown_grace = Duration::from_secs(1);
    let mut app = TestApp::start(config).await;
    let mut response = app.chat("passthrough", &chat_body(true)).await;
    response.chunk().await.unwrap();
    let started = std::time::Instant::now();
    // The stream would run 60 s: stopping well before that is the grace at work.
    let result = tokio::time::timeout(Duration::from_secs(15), app.stop())
        .await
        .expect("stops within the grace");
    assert!(result.is_ok());
    assert!(started.elapsed() < Duration::from_secs(15));
}
