//! Harnesses: turn a client's conversation (the protocol-neutral model, whatever protocol it came
//! in) into the upstream Chat Completions request, and say how the answer must be mapped back.
//! Pure and synchronous: no I/O, no async, no axum, so golden tests cover every rule. Adding a
//! harness = one module + one line in `Registry::build`: a harness owns its upstream body, the
//! headers its requests carry (`add_upstream_headers`) and its title request (`title_request`).
//!
//! `prepare` gives the upstream body and a `ResponsePlan` (how the answer maps back); a harness
//! with an Anthropic Messages form says so (`speaks`, `upstream_path`, `title_path`: `claude_code`,
//! `zcode`). `Registry::build` hands each harness its `Setup` (config, prompts, host, profiles).
//! Shared parts: `family` (what the reference's chat harnesses share: tool set, bridge, history,
//! builders), `text` (the text-protocol harnesses), `plain` (the model as a plain Chat Completions
//! request), `cache_key` (the upstream's `prompt_cache_key`), `shared_runs` (a body whose kept
//! prompt token is a run of its own, not a copy). Must not: parse a client protocol,
//! read a credential, or know which headers name a conversation.

pub mod cache_key;
pub mod claude_code;
pub mod collaboration;
pub mod deepseek_tui;
pub mod family;
pub mod kimi_cli;
pub mod kimi_code;
pub mod little_coder;
pub mod mini_swe_agent;
pub mod minimal;
pub mod opencode;
pub mod passthrough;
pub mod pi;
pub mod plain;
pub mod plain_chat;
pub mod qwen_code;
pub(crate) mod shared_runs;
pub mod swe_agent;
pub mod terminus_2;
#[cfg(test)]
mod test_support;
pub mod text;
pub mod zcode;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::HeaderMap;

use crate::clients::labels::ToolLabels;
use crate::clients::profiles::Profiles;
use crate::config::{Config, Wire};
use crate::conversation::Conversation;
use crate::conversation::body_parts::BodyParts;
use crate::conversation::mapping::ResponsePlan;
use crate::error::InternalError;
use crate::prompts::Prompts;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The request cannot be rebuilt as asked (an unknown client profile or collaboration mode).
    #[error("{message}")]
    Invalid {
        message: String,
        param: Option<&'static str>,
        code: &'static str,
    },
    /// The upstream request the harness wrote (or its title request) cannot be written as JSON:
    /// a failure of the proxy's, never an empty body sent in its place.
    #[error("cannot write the upstream request as JSON: {0}")]
    Encode(#[source] serde_json::Error),
}

/// A request the harness cannot rebuild is the client's to fix: a 400 with the harness's words; a
/// body it cannot write is the proxy's failure, a 500 that says nothing more.
impl From<HarnessError> for crate::error::ProxyError {
    fn from(err: HarnessError) -> Self {
        match err {
            HarnessError::Invalid {
                message,
                param,
                code,
            } => Self::InvalidRequest {
                message,
                param,
                code,
            },
            HarnessError::Encode(err) => Self::internal(InternalError::EncodeRequest(err)),
        }
    }
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
    pub upstream_body: BodyParts,
    /// Whether the harness rebuilt the request (`false`: the client's request goes as it was).
    pub rewritten: bool,
    pub response: ResponsePlan,
    /// Tools of the client's the harness did not send upstream; the route names them to the
    /// client (`x-harness-dropped-tools`).
    pub dropped_tools: Vec<String>,
    /// Tools of the client's sent upstream as the client defined them, with no harness
    /// counterpart (`x-harness-passthrough-tools`).
    pub passthrough_tools: Vec<String>,
    /// The request is a client's sub-agent's, rebuilt as the harness's own sub-agent
    /// (`clients::subagent`): never titled.
    pub subagent: bool,
    /// The turn is answered on the client's side with this call, not sent upstream (Codex's wait
    /// for its sub-agent, `clients::subagent::Collector`).
    pub local: Option<crate::clients::subagent::LocalCall>,
}

/// An upstream body written in `body`, held at its own size. A rewritten turn's body stays alive
/// for the whole answer (`routes::correct` keeps it to ask again), so the slack of the buffer it
/// was written in (serde_json's doubling, a writer's headroom) would be held by every open stream:
/// opencode's 64 KiB of headroom under a 9 KB small chat was the largest allocation an open stream
/// held (issue 36; mostly address space, as pages never written are not resident).
/// Shrinking a large buffer gives its tail back in place; a small one is copied, which is cheap.
pub(crate) fn sized(mut body: Vec<u8>) -> Bytes {
    body.shrink_to_fit();
    Bytes::from(body)
}

impl Prepared {
    /// The client's request as it was: its own Chat Completions bytes, else the conversation as a
    /// plain Chat Completions request (always streamed: the renderer of another protocol reads
    /// the events), its answer forwarded untouched.
    /// A turn answered on the client's side with `call` (a client's own sub-agent machinery,
    /// `clients::subagent::Collector`): nothing goes upstream, the call reaches the client as its own.
    pub fn local(call: crate::clients::subagent::LocalCall, conversation: &Conversation) -> Self {
        Self {
            upstream_body: BodyParts::default(),
            rewritten: true,
            response: ResponsePlan::Reshape(crate::conversation::mapping::Reshape {
                client_stream: conversation.options.stream,
                include_usage: conversation.options.include_usage,
                calls: None,
                actions: None,
            }),
            dropped_tools: Vec::new(),
            passthrough_tools: Vec::new(),
            subagent: false,
            local: Some(call),
        }
    }

    pub fn unchanged(request: &HarnessRequest<'_>) -> Result<Self, HarnessError> {
        let upstream_body = match request.chat_body {
            Some(bytes) => bytes.clone(),
            None => {
                let chat = plain::chat_request(&request.conversation, true);
                sized(serde_json::to_vec(&chat).map_err(HarnessError::Encode)?)
            }
        };
        Ok(Self {
            upstream_body: upstream_body.into(),
            rewritten: false,
            response: ResponsePlan::Passthrough,
            dropped_tools: Vec::new(),
            passthrough_tools: Vec::new(),
            subagent: false,
            local: None,
        })
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
    /// Whether this harness can address an upstream of `wire`: every harness writes Chat
    /// Completions; only those with a Messages form (claude-code, claude-code-bare, zcode) and
    /// `passthrough` (which forwards what it is given) also speak to a Messages upstream.
    fn speaks(&self, wire: Wire) -> bool {
        wire == Wire::Chat
    }
    /// Where this harness's own title request goes when it is a Messages request (its answer
    /// read as Chat Completions); `None`: a Chat Completions one.
    fn title_path(&self) -> Option<&'static str> {
        None
    }
    /// The upstream path of the requests this harness writes, relative to `upstream.base_url`
    /// (Chat Completions' unless the harness writes a Messages request).
    fn upstream_path(&self) -> &'static str {
        "/chat/completions"
    }
    /// Whether the client this harness poses as checks the server before its first request on a
    /// Messages upstream (Claude Code's `HEAD {base_url}`, `upstream::Upstream::preflight`).
    fn preflight(&self) -> bool {
        false
    }
    /// Headers a request this harness rebuilt carries besides the client's end-to-end ones, once
    /// the route knows the conversation: what the client it poses as sends (opencode's thread
    /// headers name the conversation). None by default.
    fn add_upstream_headers(&self, _headers: &mut HeaderMap, _conversation: &str) {}
    /// The proxy's own title request for one of this harness's conversations, as the client it
    /// poses as asks for a title: its body, and its headers added to the client's.
    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError>;
}

/// What a title request is written from.
pub struct TitleAsk<'a> {
    /// The model that titles (`titles.model`, else the conversation's).
    pub model: &'a str,
    /// What the title is made from (`titles.input`).
    pub words: TitleWords<'a>,
    /// The conversation's id, for harnesses whose requests name it.
    pub conversation: &'a str,
}

/// The text a title request carries.
#[derive(Debug, Clone, Copy)]
pub enum TitleWords<'a> {
    /// The conversation's first user words: each harness writes them as its agent does
    /// (opencode's fixed line and quoting).
    FirstUser(&'a str),
    /// Both halves, already rendered `USER:\n…\n\nASSISTANT:\n…` (`titles::input`): one user
    /// message after the title prompt, whatever the harness (the seed's contract).
    Exchange(&'a str),
}

impl<'a> TitleWords<'a> {
    pub fn text(self) -> &'a str {
        match self {
            Self::FirstUser(text) | Self::Exchange(text) => text,
        }
    }
}

/// The harnesses this process serves, built once at start-up.
#[derive(Default)]
pub struct Registry {
    harnesses: BTreeMap<&'static str, Arc<dyn Harness>>,
    /// The tool names that are metric labels (opencode's and the profiles'; every other name is
    /// `other`), for the routes' counts of dropped and kept tools.
    tool_labels: Arc<ToolLabels>,
}

/// What the harnesses are built from at start-up.
pub struct Setup<'a> {
    pub config: &'a Config,
    pub prompts: &'a Prompts,
    pub host: opencode::tools::HostInfo,
    /// The client profiles (built-in and `clients.profiles`), read by `state`.
    pub profiles: Profiles,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Opencode(#[from] opencode::SetupError),
    /// A harness's prompt or tools file is missing, malformed, or uses an unknown placeholder.
    #[error(transparent)]
    Prompt(#[from] crate::prompts::PromptError),
}

impl Registry {
    /// Every harness, one line each.
    pub fn build(setup: &Setup<'_>) -> Result<Self, SetupError> {
        let opencode = opencode::Opencode::from_setup(setup)?;
        let mut registry = Self {
            tool_labels: opencode.tool_labels().clone(),
            ..Self::default()
        };
        let opencode: Arc<dyn Harness> = Arc::new(opencode);
        registry.add(Arc::new(passthrough::Passthrough::titled_as(
            opencode.clone(),
        )));
        registry.add(Arc::new(plain_chat::PlainChat::new(setup.prompts)));
        registry.add(opencode);
        registry.add(Arc::new(pi::Pi::from_setup(setup)?));
        registry.add(Arc::new(qwen_code::QwenCode::from_setup(setup)?));
        registry.add(Arc::new(kimi_code::KimiCode::from_setup(setup)?));
        registry.add(Arc::new(kimi_cli::KimiCli::from_setup(setup)?));
        registry.add(Arc::new(deepseek_tui::DeepseekTui::from_setup(setup)?));
        registry.add(Arc::new(minimal::Minimal::from_setup(setup)?));
        registry.add(Arc::new(little_coder::LittleCoder::from_setup(setup)?));
        registry.add(Arc::new(mini_swe_agent::MiniSweAgent::from_setup(setup)?));
        registry.add(Arc::new(swe_agent::SweAgent::from_setup(setup)?));
        registry.add(Arc::new(terminus_2::Terminus2::from_setup(setup)?));
        let (full, bare) = (claude_code::Profile::Full, claude_code::Profile::Bare);
        registry.add(Arc::new(claude_code::ClaudeCode::from_setup(setup, full)?));
        registry.add(Arc::new(claude_code::ClaudeCode::from_setup(setup, bare)?));
        registry.add(Arc::new(zcode::Zcode::from_setup(setup)?));
        Ok(registry)
    }

    fn add(&mut self, harness: Arc<dyn Harness>) {
        self.harnesses.insert(harness.name(), harness);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Harness>> {
        self.harnesses.get(name)
    }

    /// Known names, comma-separated, for error messages.
    /// The tool names that are metric labels as they are (`clients::labels`).
    pub fn tool_labels(&self) -> &ToolLabels {
        &self.tool_labels
    }

    /// The harnesses that speak `wire`, comma-separated, for error messages.
    pub fn speaking(&self, wire: Wire) -> String {
        self.harnesses
            .iter()
            .filter(|(_, h)| h.speaks(wire))
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn names(&self) -> String {
        self.harnesses
            .keys()
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ProxyError;

    /// A real encode failure: a map whose keys are not strings is no JSON object.
    fn encode_error() -> serde_json::Error {
        let map = BTreeMap::from([((1, 2), 3)]);
        serde_json::to_vec(&map).expect_err("keys that are not strings")
    }

    /// The buffers behind a rebuilt body hold the body and nothing more: they live as long as the
    /// answer's stream (issue 36's memory per open stream). A run that is not the body's own is
    /// what the harness keeps for every request (`shared_runs`): opencode's system prompt, a
    /// chat harness's long tool definitions, the long runs of the family's system texts.
    #[test]
    fn every_rebuilt_upstream_body_is_held_at_its_own_size() {
        let request = serde_json::json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "You are a helpful coding assistant."},
                {"role": "user", "content": "Count the lines of every .rs file under src/."}
            ],
            "tools": [{"type": "function", "function": {
                "name": "bash",
                "description": "Runs a shell command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                    "required": ["command"]}
            }}]
        });
        let mut rebuilt = 0;
        let registry = super::test_support::registry();
        for name in super::test_support::names() {
            let prepared = super::test_support::prepare_in(&registry, name, &request);
            if !prepared.rewritten {
                continue;
            }
            rebuilt += 1;
            // The joined body may be the one run itself: gone before the runs are looked at.
            let system = system_text_span(&prepared.upstream_body.to_bytes());
            let (mut kept, mut system_kept, mut at) = (0, 0, 0);
            for run in prepared.upstream_body.into_parts() {
                let span = at..at + run.len();
                at = span.end;
                match run.try_into_mut() {
                    Ok(buffer) => {
                        assert_eq!(
                            buffer.capacity(),
                            buffer.len(),
                            "{name}: a buffer has slack"
                        );
                    }
                    Err(shared) => {
                        kept += 1;
                        assert!(shared.len() >= 2048, "{name}: a short run is shared");
                        let inside = span
                            .end
                            .min(system.end)
                            .saturating_sub(span.start.max(system.start));
                        system_kept += inside;
                    }
                }
            }
            assert!(kept <= 12, "{name}: {kept} shared runs");
            // The harnesses that keep their system text send most of it as kept runs.
            if matches!(
                name,
                "opencode" | "deepseek-tui" | "qwen-code" | "kimi-code" | "kimi-cli"
            ) {
                assert!(
                    system_kept * 2 > system.len(),
                    "{name}: {system_kept} of its system text's {} bytes are not copied",
                    system.len()
                );
            }
        }
        assert!(
            rebuilt >= 10,
            "only {rebuilt} harnesses rebuilt the request"
        );
    }

    /// Where the first system message's content string (its escaped text, quotes and all) lies in
    /// a Chat Completions body written compactly.
    fn system_text_span(body: &[u8]) -> std::ops::Range<usize> {
        let parsed: serde_json::Value = serde_json::from_slice(body).expect("JSON");
        let Some(content) = parsed["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "system"))
            .map(|m| serde_json::to_vec(&m["content"]).expect("JSON"))
        else {
            return 0..0;
        };
        let start = body
            .windows(content.len())
            .position(|w| w == content.as_slice())
            .expect("the system text as written");
        start..start + content.len()
    }

    #[test]
    fn a_body_the_harness_cannot_write_is_the_proxy_s_failure_and_tells_the_client_nothing() {
        let err = ProxyError::from(HarnessError::Encode(encode_error()));
        assert_eq!(
            (err.status().as_u16(), err.kind(), err.log_level()),
            (500, "internal", tracing::Level::ERROR)
        );
        assert_eq!(err.public_message(), "internal error");
        assert_eq!(
            err.to_string(),
            "internal error: cannot write the upstream request as JSON: key must be a string"
        );
    }
}
