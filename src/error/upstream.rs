//! `UpstreamError`: a failure of the upstream, as the client is told it, classified here beside
//! `ProxyError`, which carries it. `upstream` makes them and is the only module that knows the
//! HTTP client: a transport failure arrives worded (`words`, never the URL) with its cause boxed.

use http::StatusCode;

/// A transport failure's cause: the HTTP client's own error, its URL dropped (`upstream` boxes
/// it; a caller that asks downcasts it).
pub type TransportCause = Box<dyn std::error::Error + Send + Sync>;

/// A failure of the upstream, as the client is told it. Each cause is kept typed (`#[source]`)
/// for a caller that asks what it was (`std::error::Error::source`); the message already says
/// it in words that never include the upstream URL, so a log prints the error alone, not its
/// chain too.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// No answer could be asked for: `words` says what failed (`upstream::describe`).
    #[error("the upstream is unreachable: {words}")]
    Unreachable {
        words: String,
        #[source]
        cause: TransportCause,
    },
    #[error("the upstream did not answer in time ({0})")]
    Timeout(&'static str),
    #[error("the upstream stream failed: {0}")]
    Interrupted(#[source] Interruption),
    /// One SSE event of the answer grew past `limits.max_sse_event_bytes`.
    #[error("an upstream SSE event exceeds limits.max_sse_event_bytes ({0} bytes)")]
    EventTooLarge(usize),
    /// An event that is not a Chat Completions chunk: what it was (its start, cut short, or the
    /// JSON parser's words on it) — a description of the upstream's data rather than a cause,
    /// worded by `protocols::chat`'s readers.
    #[error("the upstream sent an event that is not a chat completions chunk: {0}")]
    InvalidEvent(String),
    /// The answer of a client that did not stream grew past `limits.max_answer_bytes`.
    #[error(
        "the upstream's answer exceeds limits.max_answer_bytes ({0} bytes), the most the proxy holds for a client that does not stream"
    )]
    AnswerTooLarge(usize),
    /// The answer failed as an error event reported (`code`, `message`, already worded) while it
    /// was read into one JSON.
    #[error("{message}")]
    Reported { code: &'static str, message: String },
    /// The joined URL would leave the base path: refused before sending (defence in depth; the
    /// forward route already refuses such paths).
    #[error("the request path leaves the upstream base path")]
    PathEscape,
}

/// Why an upstream answer stopped before it finished.
#[derive(Debug, thiserror::Error)]
pub enum Interruption {
    /// The connection failed while the body was read: `words` says how (`upstream::describe`).
    #[error("{words}")]
    Transport {
        words: String,
        #[source]
        cause: TransportCause,
    },
    /// The stream stopped with neither a `finish_reason` nor `[DONE]`.
    #[error(
        "the upstream closed the stream before the answer finished (no finish_reason, no [DONE])"
    )]
    Unfinished,
    /// The upstream sent an error object in its stream; its message, as it worded it (what the
    /// upstream said, not an error of ours, so it stays its text).
    #[error("{0}")]
    ErrorEvent(String),
}

impl UpstreamError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unreachable { .. }
            | Self::Interrupted(_)
            | Self::EventTooLarge(_)
            | Self::InvalidEvent(_)
            | Self::AnswerTooLarge(_) => StatusCode::BAD_GATEWAY,
            Self::Reported { code, .. } if *code == "upstream_timeout" => {
                StatusCode::GATEWAY_TIMEOUT
            }
            Self::Reported { .. } => StatusCode::BAD_GATEWAY,
            Self::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::PathEscape => StatusCode::BAD_REQUEST,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "upstream_unreachable",
            Self::Timeout(_) => "upstream_timeout",
            Self::Interrupted(_) => "upstream_interrupted",
            Self::EventTooLarge(_) => "upstream_event_too_large",
            Self::AnswerTooLarge(_) => "upstream_answer_too_large",
            Self::InvalidEvent(_) => "upstream_invalid_event",
            Self::Reported { code, .. } => code,
            Self::PathEscape => "invalid_path",
        }
    }

    /// The kind of `harness_proxy_errors_total` it counts as (`ProxyError::kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "upstream_unreachable",
            Self::Timeout(_) => "upstream_timeout",
            Self::Reported { code, .. } if *code == "upstream_timeout" => "upstream_timeout",
            Self::Interrupted(_) | Self::Reported { .. } => "upstream_interrupted",
            Self::EventTooLarge(_) | Self::InvalidEvent(_) | Self::AnswerTooLarge(_) => {
                "upstream_bad_answer"
            }
            Self::PathEscape => "invalid_path",
        }
    }

    /// The error an answer reader reported as `code` (one of this enum's codes, else
    /// `upstream_interrupted`) with its message as worded, for a client that gets one JSON.
    pub fn reported(code: &str, message: String) -> Self {
        let code = [
            "upstream_timeout",
            "upstream_event_too_large",
            "upstream_answer_too_large",
            "upstream_invalid_event",
            "upstream_unreachable",
        ]
        .into_iter()
        .find(|known| *known == code)
        .unwrap_or("upstream_interrupted");
        Self::Reported { code, message }
    }
}
