//! The suite's bench: one app and one upstream per test, every harness's requests told apart by
//! their tag (`TAG`), and the runners that try every harness and name each one that failed.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use harness_proxy::config::{Config, TitleOrder};
use serde_json::Value;
use tokio::sync::Notify;

use super::{Front, HARNESSES, Kind, TAG};
use crate::support::sse::DONE;
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, test_config};

/// Which wire the upstream answers a request in.
#[derive(Debug, Clone, Copy)]
pub(super) enum Wire {
    /// Chat Completions: the request of a rewriting harness.
    Chat,
    /// The front's own protocol: what `passthrough` forwards.
    Native,
}

pub(super) struct Bench {
    front: &'static dyn Front,
    pub(super) upstream: FakeUpstream,
    app: TestApp,
}

impl Bench {
    /// The app (titles off: the upstream sees only the turns) before an upstream that answers
    /// each request with `answer(request, its wire, whether it asks for a stream)`.
    pub(super) async fn start(
        front: &'static dyn Front,
        configure: impl FnOnce(&mut Config),
        answer: impl Fn(&Recorded, Wire, bool) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let upstream = FakeUpstream::start(move |r: &Recorded, _| {
            if r.is_title() {
                return Reply::sse(&[DONE]);
            }
            let harness = r.header(TAG).unwrap_or_default();
            let passthrough = HARNESSES
                .iter()
                .any(|(h, kind)| *h == harness && matches!(kind, Kind::Passthrough));
            if passthrough {
                answer(r, Wire::Native, front.native_streams(r))
            } else {
                let streams = serde_json::from_slice::<Value>(&r.body)
                    .is_ok_and(|body| body["stream"] == true);
                answer(r, Wire::Chat, streams)
            }
        })
        .await;
        let mut config = test_config(&upstream.base_url());
        config.titles.order = TitleOrder::Off;
        configure(&mut config);
        let app = TestApp::start(config).await;
        Self {
            front,
            upstream,
            app,
        }
    }

    pub(super) async fn send(
        &self,
        harness: &str,
        stream: bool,
        body: &Value,
    ) -> Result<reqwest::Response, String> {
        self.send_bytes(harness, stream, Bytes::from(body.to_string()))
            .await
    }

    pub(super) async fn send_bytes(
        &self,
        harness: &str,
        stream: bool,
        body: Bytes,
    ) -> Result<reqwest::Response, String> {
        let mut request = self
            .app
            .post(&self.front.path(harness, stream))
            .header(TAG, harness)
            .body(body);
        for (name, value) in self.front.headers() {
            request = request.header(name, value);
        }
        request.send().await.map_err(|e| e.to_string())
    }

    /// The upstream requests of `harness`'s turns.
    pub(super) fn sent(&self, harness: &str) -> Vec<Recorded> {
        self.upstream
            .requests()
            .into_iter()
            .filter(|r| !r.is_title() && r.header(TAG) == Some(harness))
            .collect()
    }

    /// `passthrough`: the last request upstream is the client's body, byte for byte.
    pub(super) fn forwarded_as_sent(&self, harness: &str, body: &Value) -> Result<(), String> {
        let sent = self.sent(harness);
        match sent.last() {
            Some(last) if last.body == body.to_string().as_bytes() => Ok(()),
            Some(last) => Err(format!(
                "the upstream got {:.300}",
                String::from_utf8_lossy(&last.body)
            )),
            None => Err("nothing reached the upstream".to_owned()),
        }
    }
}

/// Which harnesses a scenario is for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scope {
    /// Every harness: the scenario's outcome does not depend on how an answer streams.
    All,
    /// The harnesses whose answer streams to the client as the upstream sends it (not `Kind::Text`).
    Streams,
}

impl Scope {
    pub(super) fn meets(self, kind: Kind) -> bool {
        matches!(self, Self::All) || !matches!(kind, Kind::Text)
    }
}

fn harnesses(scope: Scope) -> impl Iterator<Item = (&'static str, Kind)> {
    HARNESSES
        .into_iter()
        .filter(move |(_, kind)| scope.meets(*kind))
}

/// Runs `combo` for every harness in `scope` at once; fails naming every combination that failed.
pub(super) async fn each_harness<'a, F, Fut>(front: &dyn Front, scope: Scope, combo: F)
where
    F: Fn(&'static str, Kind) -> Fut,
    Fut: Future<Output = Result<(), String>> + 'a,
{
    let runs = harnesses(scope).map(|(harness, kind)| {
        let run = combo(harness, kind);
        async move { (harness, run.await) }
    });
    let results = futures_util::future::join_all(runs).await;
    report(front, results);
}

/// Runs `combo` for one harness in `scope` after another.
pub(super) async fn each_harness_in_turn<'a, F, Fut>(front: &dyn Front, scope: Scope, combo: F)
where
    F: Fn(&'static str, Kind) -> Fut,
    Fut: Future<Output = Result<(), String>> + 'a,
{
    let mut results = Vec::new();
    for (harness, kind) in harnesses(scope) {
        results.push((harness, combo(harness, kind).await));
    }
    report(front, results);
}

pub(super) fn report(front: &dyn Front, results: Vec<(&str, Result<(), String>)>) {
    let failures: Vec<String> = results
        .into_iter()
        .filter_map(|(harness, result)| {
            result
                .err()
                .map(|why| format!("{} × {harness}: {why}", front.name()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A gate per harness, released by the test when its client has read what came before it.
#[derive(Clone)]
pub(super) struct Gates(Arc<std::sync::Mutex<HashMap<String, Arc<Notify>>>>);

impl Gates {
    pub(super) fn new() -> Self {
        Self(Arc::default())
    }

    pub(super) fn of(&self, harness: &str) -> Arc<Notify> {
        let mut gates = self.0.lock().expect("gates");
        gates.entry(harness.to_owned()).or_default().clone()
    }
}
