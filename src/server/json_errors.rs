//! The last line of "every error is OpenAI-shaped JSON": an error answer that neither our code
//! (`ProxyError`, marked by `ErrorCode`) nor the upstream (`ResponseFacts::upstream_status`)
//! made, and that is not JSON already, came from the framework (an extractor's `text/plain`
//! rejection); it is re-rendered as a `ProxyError::Rejected` with its status kept.
//!
//! Not reachable from here: what hyper answers on its own before a request exists (a request
//! line or header it cannot parse: 400; a head larger than its buffer: 431; a URI over 65,534
//! bytes: 414). hyper writes those as a bare status line with an empty body and offers no hook.

use axum::http::header;
use axum::response::Response;

use crate::error::ProxyError;
use crate::routes::ResponseFacts;
use crate::routes::error_response::{ErrorCode, ErrorShape};

/// How much of a framework error body is kept as the message.
const MAX_MESSAGE_BYTES: usize = 4096;

/// The answer with a framework error re-rendered; any other answer as it is (run on every
/// answer by `server::layers`).
pub async fn reshape(response: Response) -> Response {
    let status = response.status();
    let ours = response.extensions().get::<ErrorCode>().is_some();
    let upstreams = response
        .extensions()
        .get::<ResponseFacts>()
        .is_some_and(|facts| facts.upstream_status.is_some());
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || ours || upstreams || json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_MESSAGE_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let mut rendered =
        ErrorShape::of(&parts.extensions).render(ProxyError::Rejected { status, message });
    // Headers such as `allow` or `retry-after` still apply; length and type are the new body's.
    for (name, value) in &parts.headers {
        if !matches!(*name, header::CONTENT_TYPE | header::CONTENT_LENGTH) {
            rendered.headers_mut().append(name.clone(), value.clone());
        }
    }
    rendered
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::extract::Request;
    use axum::http::StatusCode;
    use axum::middleware::Next;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn answer(router: Router, path: &str) -> (StatusCode, String, String) {
        let request = Request::builder()
            .uri(path)
            .body(axum::body::Body::empty())
            .expect("request");
        let response = router
            .layer(axum::middleware::from_fn(
                |request: Request, next: Next| async { reshape(next.run(request).await).await },
            ))
            .oneshot(request)
            .await
            .expect("infallible");
        let status = response.status();
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, kind, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_framework_text_error_becomes_openai_json_with_its_status() {
        let router = Router::new()
            .route(
                "/plain",
                get(|| async { (StatusCode::BAD_REQUEST, "bad thing") }),
            )
            .route(
                "/empty",
                get(|| async { StatusCode::UNSUPPORTED_MEDIA_TYPE }),
            )
            .route(
                "/boom",
                get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "secret detail") }),
            );
        let (status, kind, body) = answer(router.clone(), "/plain").await;
        assert_eq!((status.as_u16(), kind.as_str()), (400, "application/json"));
        let json: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(json["error"]["message"], "bad thing");
        assert_eq!(json["error"]["code"], "invalid_request");
        let (status, _, body) = answer(router.clone(), "/empty").await;
        let json: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(status.as_u16(), 415);
        assert_eq!(json["error"]["code"], "unsupported_media_type");
        let (_, _, body) = answer(router, "/boom").await;
        assert!(!body.contains("secret detail"), "{body}");
    }

    #[tokio::test]
    async fn our_errors_and_json_pass_untouched() {
        let router = Router::new()
            .route("/ours", get(|| async { ProxyError::Overloaded }))
            .route(
                "/json",
                get(|| async {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [(header::CONTENT_TYPE, "application/json")],
                        r#"{"status":"draining"}"#,
                    )
                }),
            );
        let (status, _, body) = answer(router.clone(), "/ours").await;
        assert_eq!(status.as_u16(), 503);
        assert!(body.contains("\"overloaded\""), "{body}");
        let (_, _, body) = answer(router, "/json").await;
        assert_eq!(body, r#"{"status":"draining"}"#);
    }
}
