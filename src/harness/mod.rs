//! Harnesses: turn a client's conversation (the protocol-neutral model, whatever protocol it came
//! in) into the upstream Chat Completions request, and say how the answer must be mapped back.
//! Pure and synchronous: no I/O, no async, no axum, so golden tests cover every rule. Adding a
//! harness = one module + one line in `Registry::build`.

pub mod cache_key;
pub mod collaboration;
pub mod opencode;
pub mod passthrough;
pub mod plain;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::HeaderMap;

use crate::conversation::Conversation;
use crate::conversation::mapping::ResponsePlan;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The request cannot be rebuilt as asked (an unknown client profile or collaboration mode).
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
    /// The client's request in the model. Owned: a harness frees the history once converted, so
    /// a large request is not held twice while its upstream body is written.
    pub conversation: Conversation,
    /// The client's own body when it already is a Chat Completions request: what a harness that
    /// leaves the request alone forwards, byte for byte.
    pub chat_body: Option<&'a Bytes>,
    /// The proxy's own request headers (`x-harness-client`, `x-collaboration-mode`, `<env>` hints,
    /// the route's prompt-cache scope `cache_key::SCOPE_HEADER`).
    pub headers: &'a HeaderMap,
    /// The request's arrival time (the `<env>` date derives from it).
    pub now: DateTime<Utc>,
}

/// What a harness decided for one request.
pub struct Prepared {
    /// The Chat Completions body to send upstream.
    pub upstream_body: Bytes,
    /// Whether the harness rebuilt the request (`false`: the client's request goes as it was).
    pub rewritten: bool,
    pub response: ResponsePlan,
    /// Tools of the client's the harness did not send upstream; the route names them to the
    /// client (`x-harness-dropped-tools`).
    pub dropped_tools: Vec<String>,
    /// Tools of the client's sent upstream as the client defined them, with no harness
    /// counterpart (`x-harness-passthrough-tools`).
    pub passthrough_tools: Vec<String>,
}

impl Prepared {
    /// The client's request as it was: its own Chat Completions bytes, else the conversation as a
    /// plain Chat Completions request (always streamed: the renderer of another protocol reads
    /// the events), its answer forwarded untouched.
    pub fn unchanged(request: &HarnessRequest<'_>) -> Self {
        let upstream_body = match request.chat_body {
            Some(bytes) => bytes.clone(),
            None => {
                let chat = plain::chat_request(&request.conversation, true);
                // Serializing owned strings and JSON values cannot fail.
                Bytes::from(serde_json::to_vec(&chat).unwrap_or_default())
            }
        };
        Self {
            upstream_body,
            rewritten: false,
            response: ResponsePlan::Passthrough,
            dropped_tools: Vec::new(),
            passthrough_tools: Vec::new(),
        }
    }
}

pub trait Harness: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether this harness rebuilds requests. One that does not (`passthrough`) gets the client's
    /// bytes in whatever protocol it spoke, sent to the upstream path of that protocol, unparsed.
    fn rewrites(&self) -> bool {
        true
    }
    /// Whether this is the client's own title request (opencode sends one per new session): the
    /// harness forwards it as it is and the title service observes its answer.
    fn is_client_title_request(&self, _conversation: &Conversation) -> bool {
        false
    }
    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError>;
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
