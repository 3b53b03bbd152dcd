//! Harnesses: turn an incoming Chat Completions request into the upstream request, and say how the
//! response must be reshaped. Pure and synchronous: no I/O, no async, no axum, so golden tests cover
//! every rule. Adding a harness = one module + one line in `Registry::build`.

pub mod collaboration;
pub mod opencode;
pub mod passthrough;
pub mod plain;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderName, HeaderValue};

pub use crate::titles::facts::ConversationFacts;

use crate::protocols::chat::ResponsePlan;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The body is not JSON or not a Chat Completions request; the message says where.
    #[error("{0}")]
    InvalidJson(String),
    #[error("{message}")]
    Invalid {
        message: String,
        param: Option<&'static str>,
        code: &'static str,
    },
}

impl From<crate::clients::profiles::UnknownProfile> for HarnessError {
    fn from(err: crate::clients::profiles::UnknownProfile) -> Self {
        Self::Invalid {
            message: err.to_string(),
            param: None,
            code: "unknown_client_profile",
        }
    }
}

/// What a harness sees of one request.
pub struct HarnessRequest<'a> {
    pub body: &'a Bytes,
    pub headers: &'a HeaderMap,
    /// The request's arrival time (the `<env>` date derives from it).
    pub now: DateTime<Utc>,
}

/// What a harness decided for one request.
pub struct Prepared {
    /// The body to send upstream; `None` forwards the client's bytes untouched.
    pub upstream_body: Option<Bytes>,
    pub response: ResponsePlan,
    /// Extra headers for the client's response (e.g. `x-harness-dropped-tools`).
    pub response_headers: Vec<(HeaderName, HeaderValue)>,
    /// What the title service needs; `None` when the harness did not parse the body.
    pub facts: Option<ConversationFacts>,
}

pub trait Harness: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether this harness rebuilds requests. One that does not (`passthrough`) gets the client's
    /// bytes in whatever protocol it spoke, sent to the upstream path of that protocol.
    fn rewrites(&self) -> bool {
        true
    }
    fn prepare(&self, request: &HarnessRequest<'_>) -> Result<Prepared, HarnessError>;
}

/// The harnesses this process serves, built once at start-up.
#[derive(Default)]
pub struct Registry {
    harnesses: BTreeMap<&'static str, Arc<dyn Harness>>,
}

impl Registry {
    pub fn build(opencode: opencode::Opencode) -> Self {
        let mut registry = Self::default();
        registry.add(Arc::new(passthrough::Passthrough));
        registry.add(Arc::new(opencode));
        registry
    }

    fn add(&mut self, harness: Arc<dyn Harness>) {
        self.harnesses.insert(harness.name(), harness);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Harness>> {
        self.harnesses.get(name)
    }

    /// Known names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.harnesses
            .keys()
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    }
}
