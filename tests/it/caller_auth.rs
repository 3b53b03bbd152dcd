//! Issue 8 item 5: who a caller is. Identity comes from `Authorization` (any scheme, any case) or
//! `x-api-key`; a caller with no credential is titled but cannot read titles (401) unless it holds
//! the admin token; with `auth.keys`, every `/v1` and `/titles` request needs a listed key.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::sse::{DONE, finish_chunk, read_all, text_chunk};
use crate::support::{FakeUpstream, Recorded, Reply, TestApp, error_of, test_config};

async fn titled_upstream() -> FakeUpstream {
    FakeUpstream::start(|r: &Recorded, _| {
        if r.is_title() {
            Reply::sse(&[&text_chunk("A title"), &finish_chunk("stop"), DONE])
        } else {
            Reply::sse(&[&text_chunk("Hi"), &finish_chunk("stop"), DONE])
        }
    })
    .await
}

fn first_turn(text: &str) -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [{"role": "user", "content": text}]})
}

/// One chat turn in conversation `id` with the given credential headers.
async fn turn(app: &TestApp, id: &str, credential: &[(&str, &str)]) {
    let mut request = app
        .post("/v1/chat/completions")
        .header("x-conversation-id", id)
        .json(&first_turn(&format!("work on {id}")));
    for (k, v) in credential {
        request = request.header(*k, *v);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "{id}");
    assert!(read_all(response).await.ends_with(DONE));
}

/// The ids `GET /titles` lists for a caller.
async fn listed(app: &TestApp, credential: &[(&str, &str)]) -> Vec<String> {
    let mut request = app.get("/titles");
    for (k, v) in credential {
        request = request.header(*k, *v);
    }
    let body: Value = request.send().await.unwrap().json().await.unwrap();
    let mut ids: Vec<String> = body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {body}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_caller_without_a_credential_is_titled_but_cannot_read_titles() {
    let upstream = titled_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.auth.admin_token = Some("root-token".to_owned());
    let app = TestApp::start(config).await;
    turn(&app, "conv-nobody", &[]).await;
    for path in [
        "/titles",
        "/titles/conv-nobody",
        "/titles/conv-nobody/stream",
    ] {
        let response = app.get(path).send().await.unwrap();
        let (status, code, _) = error_of(response).await;
        assert_eq!((status, code.as_str()), (401, "unauthorized"), "{path}");
    }
    // The admin reads it: the stream ends with the title.
    let stream = app
        .get("/titles/conv-nobody/stream")
        .bearer_auth("root-token")
        .send()
        .await
        .unwrap();
    let events = read_all(stream).await;
    assert!(events.contains("event: done"), "{events}");
    let record = app.get_json("/titles/conv-nobody", "root-token").await;
    assert_eq!(record["title"], "A title");
}

#[tokio::test]
async fn every_credential_scheme_is_its_own_caller() {
    let upstream = titled_upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    turn(
        &app,
        "conv-basic",
        &[("authorization", "Basic dXNlcjpwYXNz")],
    )
    .await;
    turn(&app, "conv-xkey", &[("x-api-key", "key-x")]).await;
    turn(&app, "conv-upper", &[("authorization", "BEARER key-b")]).await;
    turn(&app, "conv-lower", &[("authorization", "bearer key-b")]).await;
    // Settle all four (their title tasks run in the background).
    for (id, credential) in [
        ("conv-basic", ("authorization", "Basic dXNlcjpwYXNz")),
        ("conv-xkey", ("x-api-key", "key-x")),
        ("conv-upper", ("authorization", "Bearer key-b")),
    ] {
        let stream = app
            .get(&format!("/titles/{id}/stream"))
            .header(credential.0, credential.1)
            .send()
            .await
            .unwrap();
        assert!(read_all(stream).await.contains("event: done"), "{id}");
    }
    assert_eq!(
        listed(&app, &[("authorization", "Basic dXNlcjpwYXNz")]).await,
        ["conv-basic"]
    );
    assert_eq!(
        listed(&app, &[("authorization", "basic dXNlcjpwYXNz")]).await,
        ["conv-basic"],
        "the scheme's case does not matter"
    );
    assert_eq!(listed(&app, &[("x-api-key", "key-x")]).await, ["conv-xkey"]);
    assert_eq!(
        listed(&app, &[("authorization", "Bearer key-x")]).await,
        ["conv-xkey"],
        "a key is the same caller as header or as bearer token"
    );
    assert_eq!(
        listed(&app, &[("authorization", "Bearer key-b")]).await,
        ["conv-lower", "conv-upper"]
    );
    assert_eq!(
        listed(&app, &[("authorization", "Bearer someone-else")]).await,
        Vec::<String>::new()
    );
}

pub(crate) fn sha256_hex(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

#[tokio::test]
async fn with_inbound_keys_only_a_listed_key_gets_in_and_scopes_the_titles() {
    let upstream = titled_upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.auth.keys = vec![sha256_hex("key-one"), sha256_hex("key-two").to_uppercase()];
    config.upstream.api_key = Some("sk-upstream".to_owned());
    let app = TestApp::start(config).await;
    let refused: [&[(&str, &str)]; 5] = [
        &[],
        &[("authorization", "Bearer key-three")],
        &[("authorization", "Bearer key-on")],
        &[("x-api-key", "key-one-and-more")],
        &[("authorization", "Basic a2V5LW9uZQ==")],
    ];
    for credential in refused {
        for (method, path) in [
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
            ("POST", "/harness/passthrough/v1/chat/completions"),
            ("GET", "/titles"),
            ("GET", "/titles/conv-1"),
        ] {
            let mut request = app
                .client
                .request(method.parse().unwrap(), app.url(path))
                .header("content-type", "application/json")
                .body(first_turn("x").to_string());
            for (k, v) in credential {
                request = request.header(*k, *v);
            }
            let (status, code, _) = error_of(request.send().await.unwrap()).await;
            assert_eq!(
                (status, code.as_str()),
                (401, "unauthorized"),
                "{method} {path} {credential:?}"
            );
        }
    }
    assert_eq!(upstream.count(), 0, "nothing refused reached the upstream");
    assert_eq!(app.get("/healthz").send().await.unwrap().status(), 200);

    turn(&app, "conv-1", &[("authorization", "Bearer key-one")]).await;
    turn(&app, "conv-2", &[("x-api-key", "key-two")]).await;
    for (id, key) in [("conv-1", "key-one"), ("conv-2", "key-two")] {
        let stream = app
            .get(&format!("/titles/{id}/stream"))
            .header("x-api-key", key)
            .send()
            .await
            .unwrap();
        assert!(read_all(stream).await.contains("event: done"), "{id}");
    }
    assert_eq!(listed(&app, &[("x-api-key", "key-one")]).await, ["conv-1"]);
    assert_eq!(
        listed(&app, &[("authorization", "Bearer key-two")]).await,
        ["conv-2"]
    );
}
