//! Issue 17 item 8: no web page can use the proxy. A POST needs a JSON content type (a page can
//! send `text/plain`, a form or no type without asking); a browser `Origin` other than the
//! proxy's own (or one allow-listed in `server.allowed_origins`) and `Sec-Fetch-Site: cross-site`
//! are refused; on a loopback listener only loopback `Host` names are served (DNS rebinding),
//! unless `server.allowed_hosts` names more. Each refusal is in the route's protocol shape and
//! reaches no upstream.

use serde_json::{Value, json};

use crate::support::sse::{DONE, finish_chunk, read_all, text_chunk};
use crate::support::{FakeUpstream, Reply, TestApp, test_config};

async fn upstream() -> FakeUpstream {
    FakeUpstream::fixed(Reply::sse(&[
        &text_chunk("Hi"),
        &finish_chunk("stop"),
        DONE,
    ]))
    .await
}

fn chat() -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [{"role": "user", "content": "hello"}]})
}

fn responses() -> Value {
    json!({"model": "mock-model", "stream": true, "input": "hello"})
}

fn messages() -> Value {
    json!({"model": "mock-model", "max_tokens": 16, "stream": true,
        "messages": [{"role": "user", "content": "hello"}]})
}

/// Every POST route that takes a body, with a body it would serve, and whether it answers in
/// Anthropic's shape.
fn post_routes() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("/v1/chat/completions", chat(), false),
        ("/harness/opencode/v1/chat/completions", chat(), false),
        ("/harness/passthrough/v1/chat/completions", chat(), false),
        ("/v1/responses", responses(), false),
        ("/harness/opencode/v1/responses", responses(), false),
        ("/v1/messages", messages(), true),
        ("/harness/opencode/v1/messages", messages(), true),
        ("/v1/messages/count_tokens", messages(), true),
        ("/v1/embeddings", json!({"model": "e", "input": "x"}), false),
    ]
}

/// (status, code or Anthropic error type, message) of an error answer, checking its shape.
async fn refusal(response: reqwest::Response, anthropic: bool) -> (u16, String, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("a JSON error body");
    if anthropic {
        assert_eq!(body["type"], "error", "Anthropic shape: {body}");
        (
            status,
            body["error"]["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    } else {
        let error = &body["error"];
        assert!(
            error.get("type").is_some() && error.get("param").is_some(),
            "OpenAI shape: {body}"
        );
        (
            status,
            error["code"].as_str().unwrap_or_default().to_owned(),
            error["message"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

#[tokio::test]
async fn a_post_without_a_json_content_type_is_415_and_never_reaches_the_upstream() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    // The probe's request (a cross-site `fetch` with `text/plain`), a form, and no type at all.
    let kinds: [&[(&str, &str)]; 5] = [
        &[
            ("content-type", "text/plain;charset=UTF-8"),
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        &[("content-type", "text/plain")],
        &[("content-type", "application/x-www-form-urlencoded")],
        &[("content-type", "multipart/form-data; boundary=x")],
        &[],
    ];
    for (path, body, anthropic) in post_routes() {
        for headers in kinds {
            let mut request = app.client.post(app.url(path)).body(body.to_string());
            for (k, v) in headers {
                request = request.header(*k, *v);
            }
            let (status, code, message) = refusal(request.send().await.unwrap(), anthropic).await;
            let expected = if anthropic {
                "invalid_request_error"
            } else {
                "unsupported_media_type"
            };
            assert_eq!(
                (status, code.as_str()),
                (415, expected),
                "{path} {headers:?}"
            );
            assert!(message.contains("application/json"), "{path}: {message}");
        }
    }
    assert_eq!(
        upstream.count(),
        0,
        "no refused request reached the upstream"
    );
}

#[tokio::test]
async fn json_content_types_with_parameters_are_served() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for kind in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
        "application/vnd.api+json",
    ] {
        let response = app
            .client
            .post(app.url("/v1/chat/completions"))
            .header("content-type", kind)
            .body(chat().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{kind}");
        assert!(read_all(response).await.ends_with(DONE), "{kind}");
    }
    assert_eq!(upstream.main_requests().len(), 4);
}

#[tokio::test]
async fn a_foreign_browser_origin_is_403_and_never_reaches_the_upstream() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let port = app.addr.port();
    let foreign = [
        "http://evil.example".to_owned(),
        // Another port of the same host is another origin (a local dev server's page).
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("https://127.0.0.1:{port}.evil.example"),
        "null".to_owned(),
    ];
    for (path, body, anthropic) in post_routes() {
        for origin in &foreign {
            let response = app
                .post(path)
                .header("origin", origin)
                .json(&body)
                .send()
                .await
                .unwrap();
            let (status, code, message) = refusal(response, anthropic).await;
            let expected = if anthropic {
                "permission_error"
            } else {
                "forbidden_origin"
            };
            assert_eq!((status, code.as_str()), (403, expected), "{path} {origin}");
            assert!(message.contains("server.allowed_origins"), "{message}");
        }
    }
    // Reads too: the titles, the inspector, a forwarded GET; and a cross-site fetch that sent no
    // Origin (a `no-cors` GET) by its `Sec-Fetch-Site`.
    for path in ["/titles", "/ui/api/inspect", "/v1/models", "/readyz"] {
        let response = app
            .get(path)
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(refusal(response, false).await.0, 403, "{path}");
        let response = app
            .get(path)
            .header("sec-fetch-site", "cross-site")
            .header("sec-fetch-mode", "no-cors")
            .send()
            .await
            .unwrap();
        assert_eq!(refusal(response, false).await.0, 403, "{path} no-cors");
    }
    assert_eq!(
        upstream.count(),
        0,
        "no refused request reached the upstream"
    );
}

#[tokio::test]
async fn the_proxys_own_origin_is_served() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let own = format!("http://{}", app.addr);
    let response = app
        .post("/v1/chat/completions")
        .header("origin", &own)
        .header("sec-fetch-site", "same-origin")
        .json(&chat())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(read_all(response).await.ends_with(DONE));
    // The console's own reads, as a browser on the page sends them.
    let response = app
        .get("/titles")
        .bearer_auth("k")
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // A link followed from another site opens the console page (the page cannot read it).
    let response = app
        .get("/ui")
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "navigate")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(upstream.main_requests().len(), 1);
}

#[tokio::test]
async fn on_a_loopback_listener_only_loopback_host_names_are_served() {
    let upstream = upstream().await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    let port = app.addr.port();
    // A rebinding page is "same-origin" with its own name: its Origin matches its Host.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_owned(),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        let response = app
            .post("/v1/chat/completions")
            .header("host", &host)
            .header("origin", format!("http://{host}"))
            .json(&chat())
            .send()
            .await
            .unwrap();
        let (status, code, message) = refusal(response, false).await;
        assert_eq!((status, code.as_str()), (403, "forbidden_host"), "{host}");
        assert!(message.contains("server.allowed_hosts"), "{message}");
        let response = app
            .post("/v1/messages")
            .header("host", &host)
            .json(&messages())
            .send()
            .await
            .unwrap();
        assert_eq!(
            refusal(response, true).await,
            (403, "permission_error".to_owned(), message.clone()),
            "{host}"
        );
        for path in [
            "/ui",
            "/ui/api/inspect",
            "/titles",
            "/v1/models",
            "/metrics",
        ] {
            let response = app.get(path).header("host", &host).send().await.unwrap();
            assert_eq!(response.status(), 403, "{path} {host}");
        }
    }
    assert_eq!(
        upstream.count(),
        0,
        "no refused request reached the upstream"
    );
    for host in [
        format!("localhost:{port}"),
        "localhost".to_owned(),
        format!("LocalHost:{port}"),
        format!("console.localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("127.1.2.3:{port}"),
        format!("[::1]:{port}"),
    ] {
        let response = app
            .post("/v1/chat/completions")
            .header("host", &host)
            .header("origin", format!("http://{host}"))
            .json(&chat())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{host}");
        read_all(response).await;
        let response = app.get("/ui").header("host", &host).send().await.unwrap();
        assert_eq!(response.status(), 200, "{host}");
    }
    // A liveness probe says only "ok": served whatever its Host.
    let response = app
        .get("/healthz")
        .header("host", "10.0.0.7:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(upstream.main_requests().len(), 7);
}

#[tokio::test]
async fn allow_listed_origins_and_hosts_are_served_and_any_host_on_an_unspecified_listener() {
    let upstream = upstream().await;
    let mut config = test_config(&upstream.base_url());
    config.server.allowed_origins = vec!["https://Console.Example:443".to_owned()];
    config.server.allowed_hosts = vec!["proxy.internal".to_owned()];
    let app = TestApp::start(config).await;
    let port = app.addr.port();
    let send = |origin: &str, host: String| {
        let site = if origin.contains("console") {
            "cross-site"
        } else {
            "same-origin"
        };
        app.post("/v1/chat/completions")
            .header("origin", origin)
            .header("sec-fetch-site", site)
            .header("host", host)
            .json(&chat())
            .send()
    };
    let response = send("https://console.example", format!("localhost:{port}"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    read_all(response).await;
    let response = send(
        "http://proxy.internal:8080",
        "proxy.internal:8080".to_owned(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200, "an allowed host's own origin");
    read_all(response).await;
    let response = send("http://console.example", format!("localhost:{port}"))
        .await
        .unwrap();
    assert_eq!(
        refusal(response, false).await.1,
        "forbidden_origin",
        "scheme counts"
    );
    let response = send("http://other.internal", "other.internal".to_owned())
        .await
        .unwrap();
    assert_eq!(refusal(response, false).await.1, "forbidden_host");
    assert_eq!(upstream.main_requests().len(), 2);

    // Listening on all interfaces (a container): the Host is not checked, the Origin still is.
    let mut config = test_config(&upstream.base_url());
    config.listen = "0.0.0.0:8080".parse().unwrap();
    let open = TestApp::start(config).await;
    let response = open
        .get("/v1/models")
        .header("host", "10.1.2.3:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = open
        .get("/v1/models")
        .header("host", "10.1.2.3:8080")
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refusal(response, false).await.1, "forbidden_origin");
}
