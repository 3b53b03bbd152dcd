//! Typed configuration: defaults < TOML file < env `HARNESS_PROXY__SECTION__KEY` < CLI flags
//! (`load`, layered by `figment`), checked as a whole (`validate`); every error names the
//! offending key. It must not read the process environment itself: callers pass the variables
//! in, so tests never mutate global state. Secrets are hidden for display (`redact`).

mod load;
mod redact;
mod validate;

pub use load::{FlagOverrides, load};
pub use redact::{redacted_toml, redacted_url};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Prefix of environment variables that override config keys.
pub const ENV_PREFIX: &str = "HARNESS_PROXY__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("config key `{key}`{origin}: {message}")]
    Key {
        key: String,
        origin: String,
        message: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the server binds.
    pub listen: SocketAddr,
    /// Harness used when neither the header nor the path names one.
    pub default_harness: String,
    /// Request header that names the harness.
    pub harness_header: String,
    /// Directory whose files replace the built-in prompts of the same relative path.
    pub prompts_dir: Option<PathBuf>,
    pub log_format: LogFormat,
    /// `tracing` filter directive, e.g. `info` or `harness_proxy=debug`.
    pub log_level: String,
    /// How long in-flight streams and title tasks may run after SIGTERM/SIGINT.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    pub upstream: UpstreamConfig,
    pub limits: LimitsConfig,
    pub opencode: OpencodeConfig,
    pub titles: TitlesConfig,
    pub collaboration: CollaborationConfig,
    pub auth: AuthConfig,
    pub clients: ClientsConfig,
    pub inspect: InspectConfig,
    pub server: ServerConfig,
    pub responses: ResponsesConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            default_harness: "opencode".to_owned(),
            harness_header: "x-harness".to_owned(),
            prompts_dir: None,
            log_format: LogFormat::Human,
            log_level: "info".to_owned(),
            shutdown_grace: Duration::from_secs(30),
            upstream: UpstreamConfig::default(),
            limits: LimitsConfig::default(),
            opencode: OpencodeConfig::default(),
            titles: TitlesConfig::default(),
            collaboration: CollaborationConfig::default(),
            auth: AuthConfig::default(),
            clients: ClientsConfig::default(),
            inspect: InspectConfig::default(),
            server: ServerConfig::default(),
            responses: ResponsesConfig::default(),
        }
    }
}

/// The upstream's protocol: every model server speaks Chat Completions; many also expose an
/// Anthropic-compatible endpoint so Claude Code can use them, which the harnesses with a Messages
/// form (claude-code, claude-code-bare, zcode) can address natively.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// `POST {base}/chat/completions`.
    #[default]
    Chat,
    /// `POST {base}/v1/messages`, Anthropic's auth and event stream.
    Messages,
}

impl Wire {
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Messages => "messages",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UpstreamConfig {
    /// Base URL of the model server, up to and including `/v1` (`wire = "chat"`), or its
    /// Anthropic root, without `/v1` (`wire = "messages"`).
    pub base_url: String,
    /// The protocol the model server speaks.
    pub wire: Wire,
    /// Upstream key; when no key source is set the client's `Authorization` is forwarded.
    pub api_key: Option<String>,
    /// File holding the key (re-read after an upstream 401 so rotated secrets are picked up).
    pub api_key_file: Option<PathBuf>,
    /// Name of an environment variable holding the key (re-read after an upstream 401).
    pub api_key_env: Option<String>,
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// Time allowed until the upstream response head arrives.
    #[serde(with = "humantime_serde")]
    pub first_byte_timeout: Duration,
    /// Longest silence allowed between two body chunks.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Retries of a request that has not reached the client yet (connect errors, 429/502/503).
    pub max_retries: u32,
    /// A `Retry-After` longer than this is not waited for: the status goes to the client.
    #[serde(with = "humantime_serde")]
    pub max_retry_wait: Duration,
    /// Idle pooled connections kept per upstream host.
    pub pool_max_idle_per_host: usize,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".to_owned(),
            wire: Wire::Chat,
            api_key: None,
            api_key_file: None,
            api_key_env: None,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            max_retries: 2,
            max_retry_wait: Duration::from_secs(10),
            pool_max_idle_per_host: 64,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    /// Decoded bytes of all inline (`data:`) images in one request; beyond it 413
    /// `images_too_large` (images given by URL are not fetched and count nothing).
    pub max_image_bytes: usize,
    /// Tools one rewritten request may offer; beyond it 413 `too_many_tools` in the client's
    /// shape. Real agents offer tens (Claude Code with many MCP servers a few hundred); the bound
    /// caps what one request makes the tool bridge and schema checks spend.
    pub max_tools: usize,
    /// Bytes of one tool's parameters schema (as JSON text) in a rewritten request; beyond it
    /// 413 `tool_schema_too_large` in the client's shape, before any tool work. Real agents'
    /// schemas take a few KiB (large MCP ones tens); the bound caps what compiling and checking
    /// one schema against the model's calls can cost.
    pub max_tool_schema_bytes: usize,
    /// Requests served at once; beyond it clients get 503 with `Retry-After`. A request takes its
    /// slot once its body has been read, so slow senders cannot hold slots.
    pub max_concurrent_requests: usize,
    /// Largest single upstream SSE event (or line) the proxy buffers; beyond it the stream ends
    /// with an `upstream_event_too_large` error event.
    pub max_sse_event_bytes: usize,
    /// Longest time to receive a request's head and body, from its first byte to its last.
    #[serde(with = "humantime_serde")]
    pub request_read_timeout: Duration,
    /// Longest silence while a request head or body is being received.
    #[serde(with = "humantime_serde")]
    pub request_idle_timeout: Duration,
    /// How long an idle keep-alive connection stays open between requests.
    #[serde(with = "humantime_serde")]
    pub keep_alive_timeout: Duration,
    /// Open client connections; beyond it a new connection is closed at once.
    pub max_connections: usize,
    /// Sum of request-body bytes held in memory at once; beyond it 503 with `Retry-After`.
    pub max_inflight_body_bytes: usize,
    /// Live `/titles/{id}/stream` subscribers at once; beyond it 503 with `Retry-After`.
    pub max_title_subscribers: usize,
    /// Largest upstream answer the proxy holds for a client that did not stream (folded into one
    /// JSON); beyond it 502 `upstream_answer_too_large`. Streams passed on are not bounded.
    pub max_answer_bytes: usize,
    /// `count_tokens` estimates running at once; `0` is one per core. Beyond it 529
    /// `overloaded_error`.
    pub max_token_counts: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 32 * 1024 * 1024,
            max_image_bytes: 20 * 1024 * 1024,
            max_tools: 2048,
            max_tool_schema_bytes: 256 * 1024,
            max_concurrent_requests: 1024,
            max_sse_event_bytes: crate::sse::DEFAULT_MAX_EVENT_BYTES,
            request_read_timeout: Duration::from_secs(30),
            request_idle_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_inflight_body_bytes: 256 * 1024 * 1024,
            max_title_subscribers: 1024,
            max_answer_bytes: 64 * 1024 * 1024,
            max_token_counts: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryMode {
    /// Assistant text stays in the history, as real opencode sends it.
    Keep,
    /// The reference converter's exact behaviour: plain assistant text is dropped.
    Reference,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolsPolicy {
    /// Canonical opencode definitions of the opencode tools the client can run.
    Intersect,
    /// All of the flavour's opencode tools, whatever the client has.
    Reference,
    /// The client's own definitions, filtered to the flavour's allowed names.
    Client,
}

/// Client tools with no counterpart in the harness's tool set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtraTools {
    /// Sent upstream with the client's own definitions, after the harness's (as opencode sends
    /// MCP tools): no agent loses a tool. `append`, its first name, is still read.
    #[serde(alias = "append")]
    Keep,
    /// Not sent: the reference's strict filtering.
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstructionsMode {
    /// `Instructions from: <path>` blocks after `</env>`, the client's system prompt last.
    Carry,
    /// The reference: the client's instructions are not sent.
    Drop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningMode {
    /// The reasoning the client echoes goes back as `reasoning_content` on its assistant message
    /// (what DeepSeek's, Kimi's and GLM's thinking modes require after a tool call).
    Return,
    /// The reference: no reasoning is sent upstream.
    Drop,
}

/// Whether the opencode harness names a prompt-cache key upstream (`opencode.prompt_cache_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptCacheKey {
    /// The client's own `prompt_cache_key`, else a hash of the caller and the conversation id it
    /// sent; none for a client that named no conversation. Upstreams that route by the key
    /// (OpenAI, and servers that copy it) keep one conversation's prefix on one cache.
    Conversation,
    /// The reference's body: no `prompt_cache_key`.
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentityPreset {
    /// `You are powered by the model named {{model}}. The exact model ID is {{provider}}/{{model}}`.
    Model,
    /// The reference's `deepseek-chat` / `deepseek/{{model}}`, whatever the model.
    Reference,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpencodeConfig {
    /// The identity line: `model` names the request's model (as real opencode does),
    /// `reference` prints the reference's fixed `deepseek-chat` text.
    pub identity: IdentityPreset,
    /// Overrides the preset's model-name template; `{{model}}` is the request's model.
    pub model_name: Option<String>,
    /// Overrides the preset's model-id template; `{{model}}`, `{{provider}}` (the next key).
    pub model_id: Option<String>,
    /// Value of `{{provider}}`; when absent, derived from `upstream.base_url`'s host
    /// (`openai-compatible` for an unknown host; `deepseek` with the reference preset).
    pub provider: Option<String>,
    pub history: HistoryMode,
    /// The client's project instructions (AGENTS.md, CLAUDE.md, its own system prompt):
    /// `carry` puts them into the system prompt as opencode does, `drop` is the reference.
    pub instructions: InstructionsMode,
    /// `return` sends the echoed reasoning back as `reasoning_content`, `drop` is the reference.
    pub reasoning: ReasoningMode,
    /// Secret the reasoning seals in clients' opaque fields are keyed from; a random key per
    /// process when absent (then replicas cannot open each other's seals).
    pub reasoning_key: Option<String>,
    /// File holding that secret (a mounted Secret, so that every replica has the same key and
    /// no manifest holds it); read once at start-up.
    pub reasoning_key_file: Option<PathBuf>,
    pub tools: ToolsPolicy,
    pub extra_tools: ExtraTools,
    pub cwd: Option<String>,
    pub workspace_root: Option<String>,
    /// `yes` / `no`.
    pub git: Option<String>,
    pub platform: Option<String>,
    /// Pins the `<env>` date line verbatim (e.g. `Sat Nov 29 2025`).
    pub today: Option<String>,
    /// IANA zone for the date line; the proxy's local zone when absent.
    pub timezone: Option<String>,
    /// The upstream body's `prompt_cache_key`: `conversation` keys each conversation's prefix
    /// cache (the client's own key, else one derived from its conversation id), `off` is the
    /// reference (no field).
    pub prompt_cache_key: PromptCacheKey,
}

impl Default for OpencodeConfig {
    fn default() -> Self {
        Self {
            identity: IdentityPreset::Model,
            model_name: None,
            model_id: None,
            provider: None,
            history: HistoryMode::Keep,
            instructions: InstructionsMode::Carry,
            reasoning: ReasoningMode::Return,
            reasoning_key: None,
            reasoning_key_file: None,
            tools: ToolsPolicy::Intersect,
            extra_tools: ExtraTools::Keep,
            cwd: None,
            workspace_root: None,
            git: None,
            platform: None,
            today: None,
            timezone: None,
            prompt_cache_key: PromptCacheKey::Conversation,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleOrder {
    Parallel,
    Before,
    After,
    Off,
}

/// What a title is made from (`titles.input`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TitleInput {
    /// The conversation's first user words, as opencode titles.
    FirstUser,
    /// The first user words and the first answer's text, each cut to `titles.input_chars`, as
    /// `USER:`/`ASSISTANT:` in one user message (the seed's wcode contract). Needs the answer, so
    /// only with `titles.order = "after"`.
    Exchange,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TitlesConfig {
    /// Harnesses whose first turns get a title request.
    pub harnesses: Vec<String>,
    pub order: TitleOrder,
    pub input: TitleInput,
    /// Longest half of an `exchange` input, in characters.
    pub input_chars: usize,
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Model for title requests; the request's own model when absent.
    pub model: Option<String>,
    pub max_chars: usize,
    /// Where records live: `memory`, `sqlite://PATH` or `redis://HOST:PORT/DB` (parsed once, here).
    pub store: StoreUrl,
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
    pub max_records: usize,
    /// Prefix of every Redis key and channel, so several deployments (or tests) share one Redis.
    pub redis_prefix: String,
    /// This process's name in the store; pending titles carry it. A fresh UUID when absent.
    pub instance_id: Option<String>,
    /// How long a process's claim on its running titles lasts without renewal; after that another
    /// process may fail them as abandoned. Renewed every third of it.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// How long a turn waits for the reasoning memo's read in the store (then goes on as if
    /// nothing was found).
    #[serde(with = "humantime_serde")]
    pub memo_read_timeout: Duration,
    /// Title requests running at once; more wait for a slot (their main requests do not).
    pub max_in_flight: usize,
}

impl Default for TitlesConfig {
    fn default() -> Self {
        Self {
            // The two agents that title their conversations themselves, each with its own request.
            harnesses: vec!["opencode".to_owned(), "claude-code".to_owned()],
            order: TitleOrder::Parallel,
            input: TitleInput::FirstUser,
            input_chars: 2000,
            timeout: Duration::from_secs(10),
            model: None,
            max_chars: 50,
            store: StoreUrl::Sqlite(PathBuf::from("./harness-proxy.db")),
            retention: Duration::from_secs(30 * 24 * 3600),
            max_records: 100_000,
            redis_prefix: "harness-proxy".to_owned(),
            instance_id: None,
            lease: Duration::from_secs(30),
            memo_read_timeout: Duration::from_millis(250),
            max_in_flight: 64,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CollaborationConfig {
    /// Keep `request_user_input` in Default mode (off, as in the reference).
    pub default_request_user_input: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Bearer token that may read every caller's titles.
    pub admin_token: Option<String>,
    /// Inbound API keys, as lower- or upper-case hex SHA-256 hashes of the keys. When set, every
    /// `/v1` and `/titles` request must carry one of the keys (`Authorization: Bearer` or
    /// `x-api-key`); the titles a key creates are that key's.
    pub keys: Vec<String>,
    /// Whether a client's own credential goes upstream when no upstream key is configured.
    /// Unset: only while `auth.keys` is empty (with inbound keys the client's key is the
    /// proxy's, not the upstream's).
    pub forward_client_key: Option<bool>,
}

impl AuthConfig {
    /// Whether the client's own key may go upstream (`forward_client_key`, else only while no
    /// inbound keys are set).
    pub fn forwards_client_key(&self) -> bool {
        self.forward_client_key.unwrap_or(self.keys.is_empty())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientsConfig {
    /// Extra alias-profile files (TOML), loaded at start-up.
    pub profiles: Vec<PathBuf>,
}

/// The title store, parsed once from `titles.store`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum StoreUrl {
    /// Bounded, in this process only: for tests and throw-away runs.
    Memory,
    /// Embedded file (the default): one host, one or more processes.
    Sqlite(PathBuf),
    /// `redis://[:password@]host:port/db` (or `rediss://`): shared by every replica.
    Redis(String),
}

/// Why a `titles.store` value is not a store URL. serde (`try_from`) only needs its `Display`,
/// which `load` shows under the key and the layer it came from.
#[derive(Debug, thiserror::Error)]
pub enum StoreUrlError {
    #[error("`sqlite://` needs a file path, e.g. `sqlite://./titles.db`")]
    SqliteWithoutPath,
    #[error("not a URL: {0}")]
    NotAUrl(#[source] url::ParseError),
    #[error("a Redis URL needs a host, e.g. `redis://127.0.0.1:6379/0`")]
    RedisWithoutHost,
    #[error("the Redis database must be a number, not `{0}`")]
    RedisDatabase(String),
    #[error("expected `memory`, `sqlite://PATH` or `redis://HOST:PORT/DB`, got `{0}`")]
    Unknown(String),
}

impl std::str::FromStr for StoreUrl {
    type Err = StoreUrlError;

    fn from_str(text: &str) -> Result<Self, StoreUrlError> {
        if text == "memory" {
            return Ok(Self::Memory);
        }
        if let Some(path) = text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(StoreUrlError::SqliteWithoutPath);
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("redis://") || text.starts_with("rediss://") {
            let url = url::Url::parse(text).map_err(StoreUrlError::NotAUrl)?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err(StoreUrlError::RedisWithoutHost);
            }
            let db = url.path().trim_start_matches('/');
            if !db.is_empty() && db.parse::<u32>().is_err() {
                return Err(StoreUrlError::RedisDatabase(db.to_owned()));
            }
            return Ok(Self::Redis(text.to_owned()));
        }
        Err(StoreUrlError::Unknown(text.to_owned()))
    }
}

impl TryFrom<String> for StoreUrl {
    type Error = StoreUrlError;
    fn try_from(text: String) -> Result<Self, StoreUrlError> {
        text.parse()
    }
}

impl From<StoreUrl> for String {
    /// The full URL, password included (config round trip); `Display` is the one for logs.
    fn from(url: StoreUrl) -> Self {
        match url {
            StoreUrl::Memory => "memory".to_owned(),
            StoreUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            StoreUrl::Redis(url) => url,
        }
    }
}

impl std::fmt::Display for StoreUrl {
    /// For logs, errors and `/readyz`: a Redis password is never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            Self::Redis(text) => match url::Url::parse(text) {
                Ok(mut url) if url.password().is_some() || url.query().is_some() => {
                    if url.password().is_some() {
                        let _ = url.set_password(Some("redacted"));
                    }
                    let query = url.query().map(redact::redacted_query);
                    url.set_query(None);
                    f.write_str(url.as_str())?;
                    match query {
                        Some(query) => write!(f, "?{query}"),
                        None => Ok(()),
                    }
                }
                _ => f.write_str(text),
            },
        }
    }
}

/// The console's request inspector (`/ui`): the last requests, client and upstream body side by
/// side, in memory only.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InspectConfig {
    /// Off by default: bodies hold the users' prompts.
    pub enabled: bool,
    /// How many of the latest proxied requests are kept (a ring: the oldest goes first).
    pub capacity: usize,
    /// Longest body kept per side; a longer one is cut and marked as cut.
    pub max_body_bytes: usize,
}

impl Default for InspectConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            capacity: 50,
            max_body_bytes: 256 * 1024,
        }
    }
}

/// Who may call the proxy from a web browser (`server::browser_guard`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Browser origins (`scheme://host[:port]`) allowed besides the proxy's own, e.g. the public
    /// origin of a reverse proxy that changes `Host`.
    pub allowed_origins: Vec<String>,
    /// `Host` names (no port) served besides the loopback names; `*` serves any. Empty: only
    /// loopback names on a loopback listener, any name on another.
    pub allowed_hosts: Vec<String>,
}

/// The Responses front (`/v1/responses`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResponsesConfig {
    /// Serve `GET /v1/responses` WebSocket upgrades (Codex's preferred transport,
    /// `routes::responses_ws`); off, the upgrade gets 426 and Codex falls back to HTTP.
    pub websocket: bool,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self { websocket: true }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
