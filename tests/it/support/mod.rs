//! Test support: start the real app on 127.0.0.1:0 against a recording fake upstream.

pub mod anthropic;
pub mod binary;
pub mod browser;
pub mod caching_upstream;
pub mod fake_upstream;
pub mod gemini_cli;
pub mod heads;
pub mod raw;
pub mod redis;
pub mod skip;
pub mod sse;
pub mod tokens;

use std::net::SocketAddr;
use std::time::Duration;

use harness_proxy::config::Config;
use harness_proxy::state::{AppState, Host};
use tokio::sync::oneshot;

#[allow(unused_imports)]
pub use fake_upstream::{FakeUpstream, Recorded, Reply, Step};

/// A running proxy. Dropping it stops the server.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    /// The running app's shared state, for tests that hold one of its permits.
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    pub server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Config for tests: the given upstream, in-memory titles, short timeouts, no retries.
pub fn test_config(upstream: &str) -> Config {
    let mut config = Config::default();
    config.upstream.base_url = upstream.to_owned();
    config.upstream.max_retries = 0;
    config.upstream.connect_timeout = Duration::from_secs(2);
    config.shutdown_grace = Duration::from_secs(5);
    config.titles.store = harness_proxy::config::StoreUrl::Memory;
    // A busy test machine can take longer than the shipped 250 ms to answer a memo read; these
    // tests show what a replica finds, not how fast (the timeout itself has a unit test).
    config.titles.memo_read_timeout = Duration::from_secs(30);
    config.opencode.today = Some("Sat Nov 29 2025".to_owned());
    config.opencode.platform = Some("linux".to_owned());
    config
}

impl TestApp {
    pub async fn start(config: Config) -> Self {
        Self::start_with_env(config, |_| None).await
    }

    /// Starts with `env` as the app's whole environment (kept: the upstream re-reads its key from
    /// it after a 401) and UTC as its local offset, so no test reads or touches the process's.
    pub async fn start_with_env(
        config: Config,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let host = Host {
            env: std::sync::Arc::new(env),
            ..Host::bare()
        };
        let state = AppState::build(config, host).expect("app state builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(harness_proxy::server::run(
            listener,
            state.clone(),
            async move {
                let _ = rx.await;
            },
        ));
        let client = reqwest::Client::builder().build().expect("client");
        Self {
            addr,
            client,
            state,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(path))
            .header("content-type", "application/json")
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(self.url(path))
    }

    /// POST a chat request through harness `harness`.
    pub async fn chat(&self, harness: &str, body: &serde_json::Value) -> reqwest::Response {
        let request = self
            .post("/v1/chat/completions")
            .header("x-harness", harness)
            .json(body);
        request.send().await.expect("POST /v1/chat/completions")
    }

    /// GET `path` as the caller holding `token`, parsed as JSON.
    pub async fn get_json(&self, path: &str, token: &str) -> serde_json::Value {
        let response = self.get(path).bearer_auth(token).send().await.expect("GET");
        response.json().await.expect("JSON body")
    }

    /// Triggers shutdown and waits for the server to finish.
    pub async fn stop(&mut self) -> std::io::Result<()> {
        self.trigger_shutdown();
        match self.server.take() {
            Some(handle) => handle.await.expect("server task"),
            None => Ok(()),
        }
    }

    pub fn trigger_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(handle) = self.server.take() {
            handle.abort();
        }
    }
}

/// Reads an OpenAI error body and returns (status, code, message).
pub async fn error_of(response: reqwest::Response) -> (u16, String, String) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.expect("error body is JSON");
    let error = &body["error"];
    assert!(
        error.get("type").is_some() && error.get("param").is_some(),
        "OpenAI error shape: {body}"
    );
    (
        status,
        error["code"].as_str().unwrap_or_default().to_owned(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// A minimal chat request.
pub fn chat_body(stream: bool) -> serde_json::Value {
    serde_json::json!({
        "model": "mock-model",
        "stream": stream,
        "messages": [{"role": "user", "content": "hello"}]
    })
}
