//! `/metrics` after known traffic, scraped from the real binary in its own process: the recorder
//! is process-wide, so only a process of its own has counts this test alone made.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use harness_proxy::config::Config;
use harness_proxy::titles::TitleService;
use harness_proxy::titles::store::{Cursor, StoreError, TitleRecord, TitleStore};
use harness_proxy::upstream::Upstream;
use serde_json::{Value, json};

use crate::support::binary::Proxy;
use crate::support::sse::{DONE, finish_chunk, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply};

const CODEX_UA: &str = "codex_exec/0.94.0 (Debian 12; x86_64) dumb (codex-exec; 0.94.0)";

/// The sum of every sample of `name` whose labels include all of `labels`.
fn sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            if metric != name {
                return None;
            }
            let rest = rest.strip_suffix('}')?;
            let has = |(k, v): &(&str, &str)| {
                rest.split(',')
                    .any(|pair| pair == format!("{k}=\"{v}\"").as_str())
            };
            labels.iter().all(has).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

fn call_delta(index: u32, id: &str, name: &str, args: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
            "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": args}}
            ]}, "finish_reason": null}]})
    )
}

fn codex_first_turn() -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "messages": [
            {"role": "system", "content": "You are Codex, a coding agent."},
            {"role": "user", "content": "List the files"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "shell", "parameters": {"type": "object",
                "properties": {"command": {"type": "array", "items": {"type": "string"}}}, "required": ["command"]}}},
            {"type": "function", "function": {"name": "metrics_widget", "parameters": {"type": "object"}}}
        ]
    })
}

#[tokio::test]
async fn metrics_answer_what_the_traffic_was() {
    let upstream = FakeUpstream::start(|r: &Recorded, _| {
        let body = String::from_utf8_lossy(&r.body);
        if r.is_title() {
            Reply::sse(&[&text_chunk("Listing files"), &finish_chunk("stop"), DONE])
        } else if body.contains("teapot") {
            Reply::json(418, r#"{"error":{"message":"I'm a teapot","type":"x","param":null,"code":null}}"#)
        } else if body.contains("Greet me through Responses") {
            Reply::sse(&[&text_chunk("Hello"), &finish_chunk("stop"), DONE])
        } else if body.contains("List the files") && body.contains("\"role\":\"tool\"") {
            // After the proxy's correction: the `bash` call alone.
            Reply::sse(&[
                &call_delta(0, "call_1", "bash", r#"{"command":"ls","description":"Lists files"}"#),
                &finish_chunk("tool_calls"),
                DONE,
            ])
        } else if body.contains("List the files") {
            // A `bash` call (an alias of Codex's `shell`) and a call to a tool nobody offered.
            Reply::sse(&[
                &call_delta(0, "call_1", "bash", r#"{"command":"ls","description":"Lists files"}"#),
                &call_delta(1, "call_2", "frobnicate", "{}"),
                &finish_chunk("tool_calls"),
                DONE,
            ])
        } else {
            Reply::json(
                200,
                r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#,
            )
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.base_url(), &[]).await;
    let client = reqwest::Client::new();
    let post = |harness: &str, body: Value| {
        client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .header("x-harness", harness)
            .bearer_auth("sk-metrics")
            .json(&body)
    };

    // Two plain passthrough requests and one the upstream refuses with 418.
    for _ in 0..2 {
        let response = post(
            "passthrough",
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(response.status(), 200);
        read_all(response).await;
    }
    let refused = post(
        "passthrough",
        json!({"model": "m", "messages": [{"role": "user", "content": "teapot"}]}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(refused.status(), 418);
    read_all(refused).await;

    // A Codex first turn through opencode: one tool kept as the client's, one call translated,
    // one unmapped, and a title.
    let response = post("opencode", codex_first_turn())
        .header("user-agent", CODEX_UA)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["x-harness-passthrough-tools"],
        "metrics_widget"
    );
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer = read_all(response).await;
    assert!(answer.contains(r#""name":"shell""#), "{answer}");
    // The title is done once its stream says so.
    let title = client
        .get(format!("{}/titles/{conversation}/stream", proxy.base))
        .bearer_auth("sk-metrics")
        .send()
        .await
        .unwrap();
    assert!(read_all(title).await.contains("event: done"));

    // A Codex 0.95+ first turn over the Responses protocol; its hosted `web_search` is dropped.
    let response = client
        .post(format!("{}/v1/responses", proxy.base))
        .bearer_auth("sk-metrics")
        .json(&json!({
            "model": "mock-model",
            "stream": true,
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Greet me through Responses"}]}],
            "tools": [{"type": "web_search"}]
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-harness-dropped-tools"], "web_search");
    let conversation = response.headers()["x-conversation-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(read_all(response).await.contains("response.completed"));
    let title = client
        .get(format!("{}/titles/{conversation}/stream", proxy.base))
        .bearer_auth("sk-metrics")
        .send()
        .await
        .unwrap();
    assert!(read_all(title).await.contains("event: done"));

    // An error of the proxy's own: counted by its kind (the upstream's 418 above is not one).
    let unknown = post(
        "no-such-harness",
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(unknown.status(), 400);
    read_all(unknown).await;

    // A text-protocol harness whose model never writes a command (the upstream answers "ok"):
    // swe-agent's correction turn three times, then the model's text is the answer.
    let stubborn = post(
        "swe-agent",
        json!({"model": "m", "messages": [{"role": "user", "content": "Fix the metrics"}],
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
                "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(stubborn.status(), 200);
    assert!(read_all(stubborn).await.contains("\"ok\""));

    let text = client
        .get(format!("{}/metrics", proxy.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let check = |name: &str, labels: &[(&str, &str)], expected: f64| {
        let got = sum(&text, name, labels);
        assert_eq!(got, expected, "{name} {labels:?}\n{text}");
    };
    check(
        "harness_proxy_errors_total",
        &[("kind", "unknown_harness")],
        1.0,
    );
    check("harness_proxy_errors_total", &[], 1.0);
    let requests = "harness_proxy_requests_total";
    let passthrough = [("harness", "passthrough"), ("protocol", "chat")];
    let chat = [("harness", "opencode"), ("protocol", "chat")];
    let responses = [("harness", "opencode"), ("protocol", "responses")];
    check(
        requests,
        &[("harness", "passthrough"), ("code", "200")],
        2.0,
    );
    check(
        requests,
        &[
            ("harness", "passthrough"),
            ("status", "4xx"),
            ("code", "418"),
        ],
        1.0,
    );
    check(
        requests,
        &[chat[0], chat[1], ("status", "2xx"), ("code", "200")],
        1.0,
    );
    check(
        requests,
        &[responses[0], responses[1], ("code", "200")],
        1.0,
    );

    // Every proxied request was timed, as histograms with buckets; none is in flight any more.
    for (labels, count) in [(&passthrough, 3.0), (&chat, 1.0), (&responses, 1.0)] {
        check("harness_proxy_overhead_seconds_count", labels, count);
        check(
            "harness_proxy_upstream_first_byte_seconds_count",
            labels,
            count,
        );
        check("harness_proxy_proxied_requests_in_flight", labels, 0.0);
    }
    check(
        "harness_proxy_overhead_seconds_bucket",
        &[passthrough[0], ("le", "+Inf")],
        3.0,
    );
    check("harness_proxy_proxied_streams_in_flight", &chat, 0.0);
    check("harness_proxy_proxied_streams_in_flight", &responses, 0.0);

    // Tools: translated back, corrected, dropped, under the names the proxy knows (`bash`, an
    // alias of Codex's `shell`), any other as `other`.
    check(
        "harness_proxy_translated_tool_calls_total",
        &[
            ("profile", "codex"),
            ("tool", "bash"),
            ("outcome", "translated"),
        ],
        1.0,
    );
    // The call to a tool nobody offered never reached the client: the proxy answered it
    // upstream once, and the model's next answer was delivered.
    check(
        "harness_proxy_call_corrections_total",
        &[("outcome", "corrected")],
        1.0,
    );
    check(
        "harness_proxy_passthrough_tools_total",
        &[("harness", "opencode"), ("tool", "other")],
        1.0,
    );
    check(
        "harness_proxy_dropped_tools_total",
        &[("harness", "opencode"), ("tool", "other")],
        1.0,
    );

    let swe = |outcome| [("harness", "swe-agent"), ("outcome", outcome)];
    check(
        "harness_proxy_harness_corrections_total",
        &swe("corrected"),
        3.0,
    );
    check(
        "harness_proxy_harness_corrections_total",
        &swe("gave_up"),
        1.0,
    );

    // The titles: two, done, timed; the store never failed.
    check("harness_proxy_titles_total", &[("status", "done")], 2.0);
    check(
        "harness_proxy_title_duration_seconds_count",
        &[("status", "done")],
        2.0,
    );
    check("harness_proxy_title_store_errors_total", &[], 0.0);
    assert!(
        text.contains("# TYPE harness_proxy_overhead_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("# HELP harness_proxy_requests_total"),
        "{text}"
    );
}

/// A store that is down: every operation fails.
struct DownStore;

#[async_trait::async_trait]
impl TitleStore for DownStore {
    async fn claim(&self, _: &TitleRecord) -> Result<bool, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn set_text(&self, _: &str, _: &str, _: &str) -> Result<(), StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn renew_lease(&self, _: &str, _: DateTime<Utc>) -> Result<(), StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn shared(&self) -> bool {
        false
    }
    async fn finish(&self, _: &TitleRecord) -> Result<(), StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn get(&self, _: Option<&str>, _: &str) -> Result<Option<TitleRecord>, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn list(
        &self,
        _: Option<&str>,
        _: Option<&Cursor>,
        _: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn prune(&self, _: DateTime<Utc>, _: usize) -> Result<u64, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn fail_stale_pending(
        &self,
        _: Option<&str>,
        _: &str,
        _: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn withdraw(&self, _: &TitleRecord, _: &str) -> Result<bool, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    async fn ping(&self) -> Result<(), StoreError> {
        Err(StoreError::Backend("down".into()))
    }
}

/// Store failures never fail a request, so they must show somewhere: counted by operation. (A
/// recorder of this test's own, on this thread, so the counts are this test's alone.)
#[test]
fn title_store_errors_are_counted_by_operation() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let config = Config::default();
            let upstream =
                Arc::new(Upstream::new(&config.upstream, Arc::new(|_| None)).expect("upstream"));
            let service = Arc::new(
                TitleService::new(config.titles.clone(), Arc::new(DownStore), upstream)
                    .expect("service"),
            );
            assert!(
                service
                    .claim("owner", "conv", "m", "opencode", "chat")
                    .await
                    .is_none(),
                "no title without a store"
            );
            assert!(!service.store_health().await.ready);
            service.recover().await;
        });
    });
    let text = handle.render();
    for operation in ["claim", "ping", "recover", "prune"] {
        assert_eq!(
            sum(
                &text,
                "harness_proxy_title_store_errors_total",
                &[("operation", operation)]
            ),
            1.0,
            "{operation}\n{text}"
        );
    }
}

/// Every series of `name` in a Prometheus text.
fn series<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.split(['{', ' ']).next() == Some(name))
        .collect()
}

/// Client-chosen tool names never become series of their own (issue 30: 150 requests of 1,000
/// names made 150,001 series, a 15 MB `/metrics` and +125 MB of memory; one unmapped call's
/// 100 KB name was one label): a name folds to the tool names the proxy knows (its profiles'
/// and its harness's) or `other`, and no label is over 64 characters.
#[tokio::test]
async fn unique_tool_names_make_a_bounded_number_of_series() {
    let long = "x".repeat(100_000);
    let upstream = FakeUpstream::start(move |r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[&text_chunk("Tools"), &finish_chunk("stop"), DONE])
        } else {
            Reply::sse(&[
                &call_delta(0, "call_1", &long, "{}"),
                &call_delta(1, "call_2", "bash", r#"{"command":"ls"}"#),
                &finish_chunk("tool_calls"),
                DONE,
            ])
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.base_url(), &[]).await;
    let client = reqwest::Client::new();
    const ROUNDS: usize = 10;
    const NAMES: usize = 200;
    for round in 0..ROUNDS {
        // Kept as the client's own: `harness_proxy_passthrough_tools_total`; the model's calls
        // to tools nobody offered: `harness_proxy_call_corrections_total`.
        let tools: Vec<Value> = (0..NAMES)
            .map(|i| {
                json!({"type": "function", "function": {"name": format!("tool_{round}_{i}"),
                "parameters": {"type": "object"}}})
            })
            .collect();
        let response = client
            .post(format!("{}/v1/chat/completions", proxy.base))
            .bearer_auth("sk-series")
            .json(&json!({"model": "m", "stream": true, "tools": tools,
                "messages": [{"role": "user", "content": format!("round {round}")}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        read_all(response).await;
        // Hosted tools the Responses front drops: `harness_proxy_dropped_tools_total`.
        let hosted: Vec<Value> = (0..NAMES)
            .map(|i| json!({"type": format!("hosted_{round}_{i}"), "name": format!("hosted_{round}_{i}")}))
            .collect();
        let response = client
            .post(format!("{}/v1/responses", proxy.base))
            .bearer_auth("sk-series")
            .json(&json!({"model": "m", "stream": true, "tools": hosted,
                "input": format!("hosted round {round}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        read_all(response).await;
    }

    let text = client
        .get(format!("{}/metrics", proxy.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for name in [
        "harness_proxy_passthrough_tools_total",
        "harness_proxy_dropped_tools_total",
        "harness_proxy_unmapped_tool_calls_total",
        "harness_proxy_translated_tool_calls_total",
    ] {
        let found = series(&text, name);
        assert!(
            found.len() <= 4,
            "{name}: {} series\n{found:#?}",
            found.len()
        );
    }
    check_sum(
        &text,
        "harness_proxy_passthrough_tools_total",
        &[("tool", "other")],
        (ROUNDS * NAMES) as f64,
    );
    check_sum(
        &text,
        "harness_proxy_dropped_tools_total",
        &[("tool", "other")],
        (ROUNDS * NAMES) as f64,
    );
    // The model's calls to tools the client did not offer (one with a 100 KB name) never reach
    // it: each round's answer is corrected three times, then ends as text, and no name becomes a
    // label.
    check_sum(
        &text,
        "harness_proxy_call_corrections_total",
        &[("outcome", "gave_up")],
        ROUNDS as f64,
    );
    let longest = text
        .split("=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(value, _)| value.len()))
        .max()
        .unwrap_or(0);
    assert!(longest <= 64, "a label of {longest} characters");
    eprintln!("/metrics: {} bytes", text.len());
    assert!(text.len() < 200_000, "/metrics is {} bytes", text.len());
}

fn check_sum(text: &str, name: &str, labels: &[(&str, &str)], expected: f64) {
    assert_eq!(
        sum(text, name, labels),
        expected,
        "{name} {labels:?}\n{text}"
    );
}

/// With `auth.keys`, `/metrics` is the operator's like `/v1` and `/titles` (issue 30: it was open
/// to anyone who could reach the listener): no key or a wrong one is 401, a listed key or the
/// admin token reads it. Without keys it stays open, as before.
#[tokio::test]
async fn with_inbound_keys_metrics_need_a_key() {
    use sha2::{Digest, Sha256};
    let upstream = FakeUpstream::start(|_: &Recorded, _| Reply::json(200, "{}")).await;
    let mut config = crate::support::test_config(&upstream.base_url());
    config.auth.keys = vec![hex::encode(Sha256::digest(b"key-one"))];
    config.auth.admin_token = Some("admin-token".to_owned());
    let app = crate::support::TestApp::start(config).await;
    for (credential, status) in [
        (None, 401),
        (Some("key-two"), 401),
        (Some("key-one"), 200),
        (Some("admin-token"), 200),
    ] {
        let mut request = app.get("/metrics");
        if let Some(key) = credential {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{credential:?}");
    }
    let open =
        crate::support::TestApp::start(crate::support::test_config(&upstream.base_url())).await;
    assert_eq!(open.get("/metrics").send().await.unwrap().status(), 200);
}
