//! `ProxyError`: every failure a client can see, classified: its status, code, metric kind
//! (`harness_proxy_errors_total`, one of `KINDS`), log level and public message (internals never
//! reach the client). `InternalError` is what failed inside, its cause typed, for the log only;
//! `upstream` the upstream's failures. Rendered and logged once, at the edge
//! (`routes::error_response::render`), in the route's protocol shape. Must not: import axum or any
//! module above it (`tests` checks).

pub mod upstream;

use http::StatusCode;

use upstream::UpstreamError;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The body is not JSON at all: `context` says what it had to be (`NOT_JSON`, or a WebSocket
    /// message's form), the parser's words follow.
    #[error("{context}: {source}")]
    InvalidJson {
        context: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{message}")]
    InvalidRequest {
        message: String,
        param: Option<&'static str>,
        code: &'static str,
    },
    #[error("unknown harness `{name}`; known harnesses: {known}")]
    UnknownHarness { name: String, known: String },
    #[error("request body exceeds the limit of {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error(
        "the request's images take {size} bytes, over the limit of {limit} bytes (limits.max_image_bytes); send fewer or smaller images"
    )]
    ImagesTooLarge { size: usize, limit: usize },
    #[error(
        "the request offers {count} tools, over the limit of {limit} (limits.max_tools); offer fewer tools"
    )]
    TooManyTools { count: usize, limit: usize },
    #[error(
        "the parameters schema of tool `{tool}` takes more than {limit} bytes (limits.max_tool_schema_bytes); offer a smaller schema"
    )]
    ToolSchemaTooLarge { tool: String, limit: usize },
    /// The body's stream failed (the connection, its framing): the server's own error, boxed, as
    /// the core does not know axum.
    #[error("cannot read the request body: {0}")]
    BodyRead(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("no route for {method} {path}")]
    NotFound { method: String, path: String },
    #[error("method {method} is not allowed on {path}")]
    MethodNotAllowed { method: String, path: String },
    #[error("{0}")]
    Unauthorized(&'static str),
    /// A POST whose body is not declared JSON (`server::browser_guard`).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Refused for who is asking, not what (`server::browser_guard`: a web page's origin, a Host
    /// that is not this proxy's); `code` names the rule.
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    #[error("{what} not found")]
    ResourceNotFound { what: String },
    #[error("the proxy is at its limit of concurrent requests; retry shortly")]
    Overloaded,
    /// Another bound than the request slots is full (what, e.g. "request bodies in memory").
    #[error("the proxy is at its limit of {0}; retry shortly")]
    Busy(&'static str),
    #[error("the request was not received in time: {0}")]
    RequestTimeout(&'static str),
    /// The title store cannot be reached; `store` is its URL without any password.
    #[error("the title store {store} is unreachable; retry shortly")]
    StoreUnavailable { store: String, reason: String },
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The cause is logged; the client is only told "internal error" (`public_message`).
    #[error("internal error: {0}")]
    Internal(#[from] InternalError),
    /// A WebSocket the route does not serve: turned off (`responses.websocket`), or a `GET` that
    /// asks for no upgrade (Codex then falls back to HTTP POST).
    #[error("{0}")]
    UpgradeRequired(&'static str),
    /// An error answer made by the framework rather than our code (an extractor's rejection),
    /// re-rendered in our shape with its status kept.
    #[error("{message}")]
    Rejected { status: StatusCode, message: String },
}

/// What failed inside the proxy, kept typed for the log; every variant's message says the cause
/// in its own words after what failed.
#[derive(Debug, thiserror::Error)]
pub enum InternalError {
    /// A handler panicked (caught by `server::layers::Outer`); the panic message was already
    /// printed by the panic hook.
    #[error("a handler panicked")]
    Panicked,
    /// A task the request ran apart (the blocking pool, `routes::answer::apart`) was cancelled.
    #[error("a task of the request failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The limiter of large rewrites was closed (it never is while the server runs).
    #[error("the rewrite limiter is closed: {0}")]
    LimiterClosed(#[from] tokio::sync::AcquireError),
    /// An answer of the proxy's own could not be written as JSON.
    #[error("cannot write the answer as JSON: {0}")]
    Encode(#[from] serde_json::Error),
    /// A request of the proxy's own to the upstream (a harness's body) could not be written as
    /// JSON: it is not sent, empty or otherwise.
    #[error("cannot write the upstream request as JSON: {0}")]
    EncodeRequest(#[source] serde_json::Error),
    /// The title store failed otherwise than by being unreachable. Boxed: `error` sits below
    /// `titles` and does not name its types.
    #[error("{0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a request body that does not parse as JSON is told.
pub const NOT_JSON: &str = "request body is not valid JSON";

impl ProxyError {
    /// A request body that is not JSON at all, the parser's error kept.
    pub fn invalid_json(source: serde_json::Error) -> Self {
        Self::InvalidJson {
            context: NOT_JSON,
            source,
        }
    }

    /// An internal failure, from its typed cause (`.map_err(ProxyError::internal)`).
    pub fn internal(cause: impl Into<InternalError>) -> Self {
        Self::Internal(cause.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidJson { .. }
            | Self::InvalidRequest { .. }
            | Self::UnknownHarness { .. }
            | Self::BodyRead(_) => StatusCode::BAD_REQUEST,
            Self::BodyTooLarge { .. }
            | Self::ImagesTooLarge { .. }
            | Self::TooManyTools { .. }
            | Self::ToolSchemaTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NotFound { .. } | Self::ResourceNotFound { .. } => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Overloaded | Self::Busy(_) | Self::StoreUnavailable { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Upstream(e) => e.status(),
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::UpgradeRequired(_) => StatusCode::UPGRADE_REQUIRED,
            Self::Rejected { status, .. } => *status,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidJson { .. } => "invalid_json",
            Self::InvalidRequest { code, .. } => code,
            Self::UnknownHarness { .. } => "unknown_harness",
            Self::BodyTooLarge { .. } => "request_too_large",
            Self::ImagesTooLarge { .. } => "images_too_large",
            Self::TooManyTools { .. } => "too_many_tools",
            Self::ToolSchemaTooLarge { .. } => "tool_schema_too_large",
            Self::BodyRead(_) => "invalid_body",
            Self::NotFound { .. } | Self::ResourceNotFound { .. } => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::Forbidden { code, .. } => code,
            Self::Overloaded | Self::Busy(_) => "overloaded",
            Self::RequestTimeout(_) => "request_timeout",
            Self::StoreUnavailable { .. } => "store_unavailable",
            Self::Upstream(e) => e.code(),
            Self::Internal(_) => "internal_error",
            Self::UpgradeRequired(_) => "websocket_unsupported",
            Self::Rejected { status, .. } => match status.as_u16() {
                404 => "not_found",
                405 => "method_not_allowed",
                408 => "request_timeout",
                413 => "request_too_large",
                414 => "uri_too_long",
                415 => "unsupported_media_type",
                431 => "headers_too_large",
                400..=499 => "invalid_request",
                _ => "internal_error",
            },
        }
    }

    /// The error's kind, the `kind` label of `harness_proxy_errors_total`: one of `KINDS`, a
    /// fixed set (unlike `code`, which a caller's `InvalidRequest` or the upstream's report
    /// words), so the metric stays low-cardinality.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidJson { .. } | Self::InvalidRequest { .. } | Self::BodyRead(_) => {
                "invalid_request"
            }
            Self::UnknownHarness { .. } => "unknown_harness",
            Self::BodyTooLarge { .. }
            | Self::ImagesTooLarge { .. }
            | Self::TooManyTools { .. }
            | Self::ToolSchemaTooLarge { .. } => "too_large",
            Self::NotFound { .. } | Self::ResourceNotFound { .. } => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::Unauthorized(_) => "unauthorized",
            Self::UnsupportedMediaType(_) | Self::Forbidden { .. } => "refused",
            Self::Overloaded | Self::Busy(_) => "overloaded",
            Self::RequestTimeout(_) => "request_timeout",
            Self::StoreUnavailable { .. } => "store_unavailable",
            Self::Upstream(e) => e.kind(),
            Self::Internal(_) => "internal",
            Self::UpgradeRequired(_) => "upgrade_required",
            Self::Rejected { .. } => "rejected",
        }
    }

    /// How loudly the boundary logs it: a failure of the proxy at `error`, of what it depends on
    /// (the upstream, the title store) at `warn`; the proxy's own shedding, which is the bound
    /// working and is counted, at `info`, as are refusals of who is asking (a wrong key, a web
    /// page, a client too slow to send); any other client mistake at `debug` (the access log
    /// has its status and code already).
    pub fn log_level(&self) -> tracing::Level {
        use tracing::Level;
        match self {
            Self::Internal(_) => Level::ERROR,
            Self::Upstream(_) | Self::StoreUnavailable { .. } => Level::WARN,
            Self::Rejected { status, .. } if status.is_server_error() => Level::WARN,
            Self::Overloaded
            | Self::Busy(_)
            | Self::Unauthorized(_)
            | Self::Forbidden { .. }
            | Self::RequestTimeout(_) => Level::INFO,
            Self::InvalidJson { .. }
            | Self::InvalidRequest { .. }
            | Self::UnknownHarness { .. }
            | Self::BodyTooLarge { .. }
            | Self::ImagesTooLarge { .. }
            | Self::TooManyTools { .. }
            | Self::ToolSchemaTooLarge { .. }
            | Self::BodyRead(_)
            | Self::NotFound { .. }
            | Self::MethodNotAllowed { .. }
            | Self::UnsupportedMediaType(_)
            | Self::ResourceNotFound { .. }
            | Self::UpgradeRequired(_)
            | Self::Rejected { .. } => Level::DEBUG,
        }
    }

    /// The proxy's own "retry shortly" (a slot, a bound or the title store): the rendering adds
    /// `Retry-After`.
    pub fn is_overload(&self) -> bool {
        matches!(
            self,
            Self::Overloaded | Self::Busy(_) | Self::StoreUnavailable { .. }
        )
    }

    /// The request field the client is told is wrong, if any.
    pub fn param(&self) -> Option<&'static str> {
        match self {
            Self::InvalidRequest { param, .. } => *param,
            _ => None,
        }
    }

    /// The message shown to the client; internal details stay in the log. A parse error can quote
    /// the client's whole input back (serde names the value it did not expect), so the message is
    /// cut at `MAX_MESSAGE_CHARS`: an error body stays small enough for any route to reshape.
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal(_) => "internal error".to_owned(),
            Self::Rejected { status, .. } if status.is_server_error() => {
                "internal error".to_owned()
            }
            other => cut_message(other.to_string()),
        }
    }
}

/// Every value `ProxyError::kind` takes (docs/metrics.md lists them).
pub const KINDS: &[&str] = &[
    "invalid_request",
    "unknown_harness",
    "too_large",
    "not_found",
    "method_not_allowed",
    "unauthorized",
    "refused",
    "overloaded",
    "request_timeout",
    "store_unavailable",
    "upstream_unreachable",
    "upstream_timeout",
    "upstream_interrupted",
    "upstream_bad_answer",
    "invalid_path",
    "internal",
    "upgrade_required",
    "rejected",
];

/// The longest error message sent, in characters.
const MAX_MESSAGE_CHARS: usize = 2048;

fn cut_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!(
            "{}… (message cut at {MAX_MESSAGE_CHARS} characters)",
            &message[..at]
        ),
        None => message,
    }
}

#[cfg(test)]
mod tests;
