//! The status, log level and metric kind of every `ProxyError`, what an internal error keeps, and
//! what the core does not import.

use super::*;
use tracing::Level;

/// One of every variant (the upstream's, too), with the status, log level and kind it must
/// have: the table the boundary's log and the error metric follow.
fn table() -> Vec<(ProxyError, u16, Level, &'static str)> {
    let upstream = |e| ProxyError::Upstream(e);
    let invalid = ProxyError::InvalidRequest {
        message: "m".into(),
        param: None,
        code: "invalid_conversation_id",
    };
    let forbidden = ProxyError::Forbidden {
        code: "forbidden_origin",
        message: "m".into(),
    };
    let store = ProxyError::StoreUnavailable {
        store: "redis://h".into(),
        reason: "down".into(),
    };
    let rejected = |status| ProxyError::Rejected {
        status,
        message: "m".into(),
    };
    let (method, path) = (String::from("GET"), String::from("/x"));
    vec![
        (
            ProxyError::invalid_json(not_json()),
            400,
            Level::DEBUG,
            "invalid_request",
        ),
        (invalid, 400, Level::DEBUG, "invalid_request"),
        (
            ProxyError::BodyRead("m".into()),
            400,
            Level::DEBUG,
            "invalid_request",
        ),
        (
            ProxyError::UnknownHarness {
                name: "x".into(),
                known: "y".into(),
            },
            400,
            Level::DEBUG,
            "unknown_harness",
        ),
        (
            ProxyError::BodyTooLarge { limit: 1 },
            413,
            Level::DEBUG,
            "too_large",
        ),
        (
            ProxyError::ImagesTooLarge { size: 2, limit: 1 },
            413,
            Level::DEBUG,
            "too_large",
        ),
        (
            ProxyError::TooManyTools { count: 2, limit: 1 },
            413,
            Level::DEBUG,
            "too_large",
        ),
        (
            ProxyError::ToolSchemaTooLarge {
                tool: "bash".into(),
                limit: 1,
            },
            413,
            Level::DEBUG,
            "too_large",
        ),
        (
            ProxyError::NotFound {
                method: method.clone(),
                path: path.clone(),
            },
            404,
            Level::DEBUG,
            "not_found",
        ),
        (
            ProxyError::ResourceNotFound {
                what: "title".into(),
            },
            404,
            Level::DEBUG,
            "not_found",
        ),
        (
            ProxyError::MethodNotAllowed { method, path },
            405,
            Level::DEBUG,
            "method_not_allowed",
        ),
        (
            ProxyError::Unauthorized("m"),
            401,
            Level::INFO,
            "unauthorized",
        ),
        (
            ProxyError::UnsupportedMediaType("m".into()),
            415,
            Level::DEBUG,
            "refused",
        ),
        (forbidden, 403, Level::INFO, "refused"),
        (ProxyError::Overloaded, 503, Level::INFO, "overloaded"),
        (
            ProxyError::Busy("token counts"),
            503,
            Level::INFO,
            "overloaded",
        ),
        (
            ProxyError::RequestTimeout("body"),
            408,
            Level::INFO,
            "request_timeout",
        ),
        (store, 503, Level::WARN, "store_unavailable"),
        (
            upstream(UpstreamError::Unreachable {
                words: "connection failed".into(),
                cause: "refused".into(),
            }),
            502,
            Level::WARN,
            "upstream_unreachable",
        ),
        (
            upstream(UpstreamError::Timeout("head")),
            504,
            Level::WARN,
            "upstream_timeout",
        ),
        (
            upstream(UpstreamError::reported("upstream_timeout", "m".into())),
            504,
            Level::WARN,
            "upstream_timeout",
        ),
        (
            upstream(UpstreamError::Interrupted(
                upstream::Interruption::Unfinished,
            )),
            502,
            Level::WARN,
            "upstream_interrupted",
        ),
        (
            upstream(UpstreamError::reported("anything", "m".into())),
            502,
            Level::WARN,
            "upstream_interrupted",
        ),
        (
            upstream(UpstreamError::EventTooLarge(1)),
            502,
            Level::WARN,
            "upstream_bad_answer",
        ),
        (
            upstream(UpstreamError::InvalidEvent("x".into())),
            502,
            Level::WARN,
            "upstream_bad_answer",
        ),
        (
            upstream(UpstreamError::AnswerTooLarge(1)),
            502,
            Level::WARN,
            "upstream_bad_answer",
        ),
        (
            upstream(UpstreamError::PathEscape),
            400,
            Level::WARN,
            "invalid_path",
        ),
        (
            ProxyError::internal(InternalError::Panicked),
            500,
            Level::ERROR,
            "internal",
        ),
        (
            ProxyError::UpgradeRequired("m"),
            426,
            Level::DEBUG,
            "upgrade_required",
        ),
        (
            rejected(StatusCode::URI_TOO_LONG),
            414,
            Level::DEBUG,
            "rejected",
        ),
        (
            rejected(StatusCode::BAD_GATEWAY),
            502,
            Level::WARN,
            "rejected",
        ),
    ]
}

/// A real `serde_json::Error`: `x` is not JSON.
fn not_json() -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>("x").expect_err("not JSON")
}

#[test]
fn every_variant_has_its_status_log_level_and_kind() {
    for (err, status, level, kind) in table() {
        assert_eq!(
            (err.status().as_u16(), err.log_level(), err.kind()),
            (status, level, kind),
            "{err:?}"
        );
    }
}

#[test]
fn kinds_are_the_documented_fixed_set() {
    let seen: Vec<&str> = table().iter().map(|(err, ..)| err.kind()).collect();
    for kind in &seen {
        assert!(KINDS.contains(kind), "{kind} is not in KINDS");
    }
    // docs/metrics.md lists them all: tests/it/docs.rs (the image builds without docs/).
    for kind in KINDS {
        assert!(seen.contains(kind), "no variant has the kind {kind}");
    }
}

#[test]
fn a_body_that_is_not_json_keeps_the_parser_s_error_and_says_it_after_what_failed() {
    let err = ProxyError::invalid_json(not_json());
    assert_eq!(
        err.public_message(),
        "request body is not valid JSON: expected value at line 1 column 1"
    );
    let source =
        std::error::Error::source(&err).and_then(|s| s.downcast_ref::<serde_json::Error>());
    assert!(source.is_some_and(serde_json::Error::is_syntax));
}

#[test]
fn an_unreadable_body_keeps_the_server_s_error_and_says_it_after_what_failed() {
    let err = ProxyError::BodyRead(Box::new(std::io::Error::other("connection reset")));
    assert_eq!(
        err.public_message(),
        "cannot read the request body: connection reset"
    );
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<std::io::Error>());
    assert!(source.is_some(), "the body's error is kept typed");
}

#[test]
fn an_internal_error_keeps_its_cause_for_the_log_and_tells_the_client_nothing() {
    let cause = serde_json::from_str::<u8>("x").expect_err("not a number");
    let err = ProxyError::internal(cause);
    assert_eq!(err.public_message(), "internal error");
    assert!(
        err.to_string()
            .starts_with("internal error: cannot write the answer as JSON: ")
    );
    let source = std::error::Error::source(&err)
        .and_then(std::error::Error::source)
        .and_then(|s| s.downcast_ref::<serde_json::Error>());
    assert!(source.is_some(), "the serde_json error is kept typed");
}

/// The core is what the pure layers (`protocols`, `harness`) and `upstream` import: none of its
/// files (its tests aside, which may build anything) names axum, the HTTP client or a module of
/// the proxy above it. Comments are not read: they may say where the rendering lives.
#[test]
fn the_core_imports_neither_axum_nor_the_modules_above_it() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/error");
    let mut read = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/error") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a core file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for forbidden in [
                "axum",
                "tower",
                "hyper",
                "reqwest",
                "crate::harness",
                "crate::upstream",
                "crate::routes",
                "crate::server",
                "crate::protocols",
                "crate::titles",
                "crate::api",
            ] {
                assert!(
                    !code.contains(forbidden),
                    "src/error/{name}:{} names `{forbidden}`: {line}",
                    n + 1
                );
            }
        }
        read.push(name.to_owned());
    }
    read.sort();
    assert_eq!(
        read,
        ["mod.rs", "upstream.rs"],
        "the core's files, every one read"
    );
}
