//! A `ProxyError` as an HTTP answer: the one rendering (`render`: logged once at the error's
//! level, counted by its kind in `harness_proxy_errors_total`, its body in a protocol's shape),
//! OpenAI's shape as `ProxyError`'s `IntoResponse`, and `ErrorShape`, the route's protocol shape
//! the middlewares that refuse a request read.
//!
//! Owns: the error's edge, where axum is known. Must not: classify an error (status, code, kind
//! and level are `crate::error`'s), nor leak internals (the public message is the core's).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::error::{ErrorBody, ErrorDetail};
use crate::error::ProxyError;

/// Marker put in response extensions so the access log can name the error code.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);

/// What a protocol's error shape is rendered from: the status, the code and the public message
/// (internals already left out).
pub struct ErrorFacts<'a> {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: &'a str,
}

/// The one rendering of `err`: logged at its `log_level`, counted by its `kind`, its body made
/// by `shape` (a protocol's error shape, which may also pick the status it is sent with),
/// `Retry-After` on the proxy's own overload, and the code marked for the access log.
pub fn render(
    err: &ProxyError,
    shape: impl FnOnce(&ErrorFacts<'_>) -> (StatusCode, String),
) -> Response {
    let status = err.status();
    log(err);
    metrics::counter!("harness_proxy_errors_total", "kind" => err.kind()).increment(1);
    let message = err.public_message();
    let (status, body) = shape(&ErrorFacts {
        status,
        code: err.code(),
        message: &message,
    });
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if err.is_overload() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response.extensions_mut().insert(ErrorCode(err.code()));
    response
}

/// One line at `log_level` (tracing's macros want their level known where they are written).
fn log(err: &ProxyError) {
    let (code, kind) = (err.code(), err.kind());
    match err.log_level() {
        tracing::Level::ERROR => tracing::error!(code, kind, error = %err, "request failed"),
        tracing::Level::WARN => tracing::warn!(code, kind, error = %err, "request failed"),
        tracing::Level::INFO => tracing::info!(code, kind, error = %err, "request refused"),
        _ => tracing::debug!(code, kind, error = %err, "request refused"),
    }
}

/// OpenAI's error `type`, from the status.
fn openai_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        404 => "not_found_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// OpenAI's shape, what Chat Completions and Responses clients get.
impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let kind = openai_type(self.status());
        let param = self.param();
        render(&self, |facts| {
            let body = ErrorBody {
                error: ErrorDetail {
                    message: facts.message,
                    kind,
                    param,
                    code: facts.code,
                },
            };
            (facts.status, body.to_json())
        })
    }
}

/// How the route's client protocol renders the proxy's own errors. A protocol's route layer puts
/// it in the request's extensions, so a middleware that refuses the request (admission, the key
/// gate, the browser guard) answers in the client's shape, and in the response's, for the
/// framework's own errors (`server::json_errors`). Absent: OpenAI's shape.
#[derive(Clone, Copy)]
pub struct ErrorShape(pub fn(ProxyError) -> Response);

impl ErrorShape {
    pub fn of(extensions: &http::Extensions) -> Self {
        extensions
            .get::<Self>()
            .copied()
            .unwrap_or(Self(IntoResponse::into_response))
    }

    pub fn render(self, err: ProxyError) -> Response {
        (self.0)(err)
    }
}
