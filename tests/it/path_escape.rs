//! Issue 8 item 1: no request path can leave the upstream base path. Raw request targets (as
//! `curl --path-as-is` sends them) in every encoding of `..`; the upstream must see nothing.

use crate::support::raw::{exchange, request};
use crate::support::{FakeUpstream, Reply, TestApp, test_config};

/// Dot segments and separators, spelled every way a client can send them.
const ESCAPES: [&str; 22] = [
    "../../tenant-b/files/123",
    "%2e%2e/%2e%2e/tenant-b/files/123",
    "%2E./%2E%2e/tenant-b/files/123",
    ".%2e/.%2E/tenant-b/files/123",
    "..%2f..%2ftenant-b/files/123",
    "%2e%2e%2F%2e%2e%2Ftenant-b%2Ffiles%2F123",
    "..\\..\\tenant-b\\files\\123",
    "..%5c..%5ctenant-b%5cfiles%5c123",
    "%2e%2e%5C%2e%2e%5Ctenant-b/files/123",
    "%252e%252e/%252e%252e/tenant-b/files/123",
    "%252e%252e%252f%252e%252e%252ftenant-b/files/123",
    "files/../../../tenant-b/files/123",
    "files/./../../../tenant-b",
    "..",
    // A dot segment with `;` parameters: Tomcat and Spring strip them and climb.
    "%2e%2e;/tenant-b/files/123",
    "..;/tenant-b/files/123",
    "..;jsessionid=1/..;/tenant-b",
    ".%2E;x=y/tenant-b",
    ".;/tenant-b",
    "%2e%2e%3b/tenant-b/files/123",
    "%252e%252e%253b/tenant-b/files/123",
    "files/..;/tenant-b",
];

async fn app_before_tenant_a() -> (FakeUpstream, TestApp) {
    let upstream = FakeUpstream::fixed(Reply::json(200, r#"{"object":"list","data":[]}"#)).await;
    let mut config = test_config(&format!("http://{}/tenant-a/v1", upstream.addr));
    config.upstream.api_key = Some("sk-operator-key".to_owned());
    let app = TestApp::start(config).await;
    (upstream, app)
}

#[tokio::test]
async fn no_encoding_of_dot_segments_leaves_the_upstream_base_path() {
    let (upstream, app) = app_before_tenant_a().await;
    let mut tried = 0;
    for prefix in ["/v1/", "/harness/passthrough/v1/", "/harness/opencode/v1/"] {
        for escape in ESCAPES {
            for method in ["DELETE", "GET", "POST"] {
                let target = format!("{prefix}{escape}");
                let answer =
                    exchange(app.addr, &request(method, &target, &["content-length: 0"])).await;
                assert_eq!(answer.status, 400, "{method} {target}: {}", answer.text());
                let body = answer.json();
                assert_eq!(body["error"]["code"], "invalid_path", "{method} {target}");
                assert_eq!(body["error"]["type"], "invalid_request_error");
                tried += 1;
            }
        }
    }
    assert_eq!(tried, 3 * ESCAPES.len() * 3);
    assert_eq!(
        upstream.requests().len(),
        0,
        "nothing reaches the upstream: {:?}",
        upstream
            .requests()
            .iter()
            .map(|r| &r.path)
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn paths_inside_the_base_path_are_forwarded_under_it() {
    let (upstream, app) = app_before_tenant_a().await;
    let cases = [
        ("/v1/models?limit=2", "/tenant-a/v1/models?limit=2"),
        ("/v1/files/abc/content", "/tenant-a/v1/files/abc/content"),
        ("/v1/files/a%20b", "/tenant-a/v1/files/a%20b"),
        ("/v1/files/x/../y", "/tenant-a/v1/files/y"),
        ("/v1/files/./y", "/tenant-a/v1/files/y"),
        ("/harness/passthrough/v1/models", "/tenant-a/v1/models"),
        ("/v1/files/a;b", "/tenant-a/v1/files/a;b"),
        ("/v1/files/...;x", "/tenant-a/v1/files/...;x"),
    ];
    for (target, _) in cases {
        let answer = exchange(app.addr, &request("GET", target, &[])).await;
        assert_eq!(answer.status, 200, "{target}: {}", answer.text());
    }
    let seen: Vec<String> = upstream.requests().into_iter().map(|r| r.path).collect();
    let expected: Vec<&str> = cases.iter().map(|(_, want)| *want).collect();
    assert_eq!(seen, expected);
    assert!(
        upstream
            .requests()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-operator-key"))
    );
}
