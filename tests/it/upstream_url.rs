//! Issue 17 items 10 and 12: how the upstream base URL and the credentials reach the model
//! server. A base URL with a query (Azure-style `…/v1?api-version=…`) keeps its query on every
//! request, after the joined path, and its values are never shown; userinfo in the URL and an
//! upstream key send one `Authorization`; with `auth.keys` set the client's inbound key is not
//! forwarded unless `auth.forward_client_key` says so.

use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::support::binary::Proxy;
use crate::support::sse::read_all;
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, chat_body, test_config};

fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

const QUERY_SECRET: &str = "QSECRET-0017";

fn authorizations(recorded: &Recorded) -> Vec<String> {
    recorded
        .headers
        .get_all("authorization")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_base_url_query_is_kept_after_the_path_and_its_values_never_shown() {
    let upstream = FakeUpstream::fixed(Reply::json(200, r#"{"object":"list","data":[]}"#)).await;
    let base = format!(
        "http://{}/v1?api-version=2024-10-21&sig={QUERY_SECRET}",
        upstream.addr
    );
    let mut config = test_config(&base);
    config.upstream.api_key = Some("sk-operator".to_owned());
    let app = TestApp::start(config).await;
    let chat = app.chat("passthrough", &chat_body(false)).await;
    assert_eq!(chat.status(), 200);
    read_all(chat).await;
    let models = app.get("/v1/models?limit=2").send().await.unwrap();
    assert_eq!(models.status(), 200);
    let paths: Vec<String> = upstream.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            format!("/v1/chat/completions?api-version=2024-10-21&sig={QUERY_SECRET}"),
            format!("/v1/models?api-version=2024-10-21&sig={QUERY_SECRET}&limit=2"),
        ]
    );

    let output = Command::new(env!("CARGO_BIN_EXE_harness-proxy"))
        .args(["check-config", "--upstream", &base])
        .env_clear()
        .env("HARNESS_PROXY__TITLES__STORE", "memory")
        .stdin(Stdio::null())
        .output()
        .expect("check-config runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains(QUERY_SECRET), "{stdout}");
    assert!(
        stdout.contains("?api-version=<redacted>&sig=<redacted>\""),
        "{stdout}"
    );
    let proxy = Proxy::start(&base, &[("HARNESS_PROXY__LOG_FORMAT", "json")]).await;
    let logs = proxy.logs();
    assert!(logs.contains("harness-proxy serving"), "{logs}");
    assert!(!logs.contains(QUERY_SECRET), "{logs}");
}

#[tokio::test]
async fn userinfo_and_an_upstream_key_send_one_authorization_the_key_s() {
    let upstream = FakeUpstream::fixed(Reply::json(200, r#"{"object":"list","data":[]}"#)).await;
    let base = format!("http://user:url-pass@{}/v1", upstream.addr);
    let mut config = test_config(&base);
    config.upstream.api_key = Some("sk-operator".to_owned());
    let with_key = TestApp::start(config).await;
    let without_key = TestApp::start(test_config(&base)).await;
    for app in [&with_key, &without_key] {
        let response = app
            .get("/v1/models")
            .bearer_auth("sk-client")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let seen: Vec<Vec<String>> = upstream.requests().iter().map(authorizations).collect();
    // The configured key wins over the URL's credentials, which win over the client's key.
    assert_eq!(
        seen,
        [
            vec!["Bearer sk-operator".to_owned()],
            vec!["Basic dXNlcjp1cmwtcGFzcw==".to_owned()],
        ]
    );
}

#[tokio::test]
async fn with_inbound_keys_the_client_s_key_goes_upstream_only_when_configured() {
    let upstream = FakeUpstream::fixed(Reply::json(200, r#"{"object":"list","data":[]}"#)).await;
    let mut config = test_config(&upstream.base_url());
    config.auth.keys = vec![hash_key("sk-inbound")];
    let kept = TestApp::start(config.clone()).await;
    config.auth.forward_client_key = Some(true);
    let forwarded = TestApp::start(config).await;
    for app in [&kept, &forwarded] {
        let response = app
            .get("/v1/models")
            .bearer_auth("sk-inbound")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let chat = app
            .post("/v1/chat/completions")
            .header("x-harness", "passthrough")
            .header("x-api-key", "sk-inbound")
            .json(&chat_body(false))
            .send()
            .await
            .unwrap();
        assert_eq!(chat.status(), 200);
    }
    let seen: Vec<Vec<String>> = upstream.requests().iter().map(authorizations).collect();
    assert_eq!(
        seen,
        [vec![], vec![], vec!["Bearer sk-inbound".to_owned()], vec![],]
    );
    // Nor as the `x-api-key` header a passthrough request carries on.
    let api_keys: Vec<Option<String>> = upstream
        .requests()
        .iter()
        .map(|r| r.header("x-api-key").map(str::to_owned))
        .collect();
    assert_eq!(api_keys, [None, None, None, Some("sk-inbound".to_owned())]);
    // Start-up says whether a client's key is forwarded.
    let proxy = Proxy::start(
        &upstream.base_url(),
        &[
            ("HARNESS_PROXY__LOG_FORMAT", "json"),
            (
                "HARNESS_PROXY__AUTH__KEYS",
                &format!("[\"{}\"]", hash_key("sk-inbound")),
            ),
        ],
    )
    .await;
    let logs = proxy.logs();
    assert!(
        logs.contains(
            r#""upstream_credential":"none (the client's key is not forwarded: auth.keys is set)""#
        ),
        "{logs}"
    );
}

/// Issue 30 item 6: the Chat route forwarded the client's query string, so `?key=` reached the
/// upstream URL and the inspector. A rebuilt request is the proxy's own (what the upstream needs
/// of a query is in `upstream.base_url`); `passthrough` keeps the client's parameters but never
/// one named like a credential.
#[tokio::test]
async fn the_chat_route_forwards_no_client_query_when_it_rebuilds_and_no_credential_ever() {
    let upstream = FakeUpstream::fixed(Reply::sse(&[
        &crate::support::sse::text_chunk("hi"),
        crate::support::sse::DONE,
    ]))
    .await;
    let mut config = test_config(&upstream.base_url());
    config.inspect.enabled = true;
    config.titles.order = harness_proxy::config::TitleOrder::Off;
    let app = TestApp::start(config).await;
    let query = format!("key={QUERY_SECRET}&api-version=2024-10&Access_Token={QUERY_SECRET}");
    for path in [
        format!("/harness/opencode/v1/chat/completions?{query}"),
        format!("/harness/passthrough/v1/chat/completions?{query}"),
    ] {
        let response = app
            .post(&path)
            .bearer_auth("sk-caller")
            .json(&chat_body(true))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        read_all(response).await;
    }
    let paths: Vec<String> = upstream
        .main_requests()
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/chat/completions?api-version=2024-10"
        ],
        "rebuilt: no query; passthrough: the client's parameters without the credentials"
    );
    let inspected = app
        .get_json("/ui/api/inspect", "sk-caller")
        .await
        .to_string();
    assert!(inspected.contains("chat/completions"), "{inspected:.600}");
    assert!(!inspected.contains(QUERY_SECRET), "{inspected:.600}");
}
