//! Typed configuration: defaults < TOML file < env `HARNESS_PROXY__SECTION__KEY` < CLI flags.
//!
//! Owns parsing, layering and validation; every error names the offending key. It must not read the
//! process environment itself: callers pass the variables in, so tests never mutate global state.

use std::collections::BTreeMap;
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
    /// Base URL of the model server, up to and including `/v1`.
    pub base_url: String,
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
            tools: ToolsPolicy::Intersect,
            extra_tools: ExtraTools::Keep,
            cwd: None,
            workspace_root: None,
            git: None,
            platform: None,
            today: None,
            timezone: None,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TitlesConfig {
    /// Harnesses whose first turns get a title request.
    pub harnesses: Vec<String>,
    pub order: TitleOrder,
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
}

impl Default for TitlesConfig {
    fn default() -> Self {
        Self {
            harnesses: vec!["opencode".to_owned()],
            order: TitleOrder::Parallel,
            timeout: Duration::from_secs(10),
            model: None,
            max_chars: 50,
            store: StoreUrl::Sqlite(PathBuf::from("./harness-proxy.db")),
            retention: Duration::from_secs(30 * 24 * 3600),
            max_records: 100_000,
            redis_prefix: "harness-proxy".to_owned(),
            instance_id: None,
            lease: Duration::from_secs(30),
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

impl std::str::FromStr for StoreUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text == "memory" {
            return Ok(Self::Memory);
        }
        if let Some(path) = text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err("`sqlite://` needs a file path, e.g. `sqlite://./titles.db`".into());
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("redis://") || text.starts_with("rediss://") {
            let url = reqwest::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err("a Redis URL needs a host, e.g. `redis://127.0.0.1:6379/0`".into());
            }
            let db = url.path().trim_start_matches('/');
            if !db.is_empty() && db.parse::<u32>().is_err() {
                return Err(format!("the Redis database must be a number, not `{db}`"));
            }
            return Ok(Self::Redis(text.to_owned()));
        }
        Err(format!(
            "expected `memory`, `sqlite://PATH` or `redis://HOST:PORT/DB`, got `{text}`"
        ))
    }
}

impl TryFrom<String> for StoreUrl {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
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
            Self::Redis(text) => match reqwest::Url::parse(text) {
                Ok(mut url) if url.password().is_some() || url.query().is_some() => {
                    if url.password().is_some() {
                        let _ = url.set_password(Some("redacted"));
                    }
                    let query = url.query().map(redacted_query);
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

/// Values given on the command line; `None` leaves the lower layers in charge.
#[derive(Debug, Clone, Default)]
pub struct FlagOverrides {
    pub listen: Option<String>,
    pub upstream: Option<String>,
    pub default_harness: Option<String>,
    pub log_format: Option<String>,
    pub prompts_dir: Option<PathBuf>,
}

/// Where a layered value came from, for error messages.
#[derive(Debug, Clone)]
enum Origin {
    Env(String),
    Flag(&'static str),
}

/// Builds the effective config. `env` is the process environment (or a test's map).
pub fn load(
    file: Option<&std::path::Path>,
    env: &BTreeMap<String, String>,
    flags: &FlagOverrides,
) -> Result<Config, ConfigError> {
    let mut tree = toml::Table::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        tree = text
            .parse::<toml::Table>()
            .map_err(|e| ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
    }
    let mut origins: Vec<(Vec<String>, Origin)> = Vec::new();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        if path.iter().any(String::is_empty) {
            return Err(ConfigError::Key {
                key: rest.to_ascii_lowercase().replace("__", "."),
                origin: format!(" (from env {name})"),
                message: "malformed variable name".to_owned(),
            });
        }
        insert(&mut tree, &path, env_value(raw));
        origins.push((path, Origin::Env(name.clone())));
    }
    let flag_values: [(&'static str, &[&str], Option<String>); 5] = [
        ("--listen", &["listen"], flags.listen.clone()),
        (
            "--upstream",
            &["upstream", "base_url"],
            flags.upstream.clone(),
        ),
        (
            "--default-harness",
            &["default_harness"],
            flags.default_harness.clone(),
        ),
        ("--log-format", &["log_format"], flags.log_format.clone()),
        (
            "--prompts-dir",
            &["prompts_dir"],
            flags.prompts_dir.as_ref().map(|p| p.display().to_string()),
        ),
    ];
    for (flag, path, value) in flag_values {
        if let Some(value) = value {
            let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
            insert(&mut tree, &path, toml::Value::String(value));
            origins.push((path, Origin::Flag(flag)));
        }
    }
    let config = deserialize(tree, &origins)?;
    validate(&config)?;
    Ok(config)
}

/// Env values are typed by TOML syntax (`true`, `8`, `["a"]`); anything else is a string.
fn env_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(
                v @ (toml::Value::Boolean(_) | toml::Value::Integer(_) | toml::Value::Array(_)),
            ) => v,
            _ => toml::Value::String(raw.to_owned()),
        },
        Err(_) => toml::Value::String(raw.to_owned()),
    }
}

fn insert(tree: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut table = tree;
    for key in parents {
        let entry = table
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(next) = entry else {
            return;
        };
        table = next;
    }
    table.insert(last.clone(), value);
}

fn lookup_mut<'a>(tree: &'a mut toml::Table, path: &[String]) -> Option<&'a mut toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = tree;
    for key in parents {
        table = table.get_mut(key)?.as_table_mut()?;
    }
    table.get_mut(last)
}

fn deserialize(
    mut tree: toml::Table,
    origins: &[(Vec<String>, Origin)],
) -> Result<Config, ConfigError> {
    // An env value that looked like a number or bool may be meant as a string (a numeric model
    // name): retry such keys as strings before reporting.
    for _ in 0..=origins.len() {
        let value = toml::Value::Table(tree.clone());
        match serde_path_to_error::deserialize::<_, Config>(value) {
            Ok(config) => return Ok(config),
            Err(err) => {
                let key = err.path().to_string();
                let message = err.inner().to_string();
                let path: Vec<String> = key.split('.').map(str::to_owned).collect();
                let from_env = origins.iter().find(|(p, _)| *p == path);
                if let Some((_, Origin::Env(_))) = from_env
                    && message.contains("expected a string")
                    && let Some(slot) = lookup_mut(&mut tree, &path)
                    && !slot.is_str()
                {
                    let text = slot.to_string();
                    *slot = toml::Value::String(text);
                    continue;
                }
                return Err(key_error(&key, &message, origins));
            }
        }
    }
    Err(ConfigError::Key {
        key: ".".into(),
        origin: String::new(),
        message: "unresolvable".into(),
    })
}

fn key_error(key: &str, message: &str, origins: &[(Vec<String>, Origin)]) -> ConfigError {
    // For unknown fields serde reports the parent path; name the full key instead.
    let mut full = if key == "." {
        String::new()
    } else {
        key.to_owned()
    };
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|m| m.split('`').next())
        && full.rsplit('.').next() != Some(field)
    {
        if !full.is_empty() {
            full.push('.');
        }
        full.push_str(field);
    }
    let path: Vec<&str> = full.split('.').collect();
    let origin = origins
        .iter()
        .find(|(p, _)| p.iter().map(String::as_str).eq(path.iter().copied()))
        .map(|(_, o)| match o {
            Origin::Env(name) => format!(" (from env {name})"),
            Origin::Flag(flag) => format!(" (from {flag})"),
        })
        .unwrap_or_default();
    // The TOML layer appends "in `section`"; the key already says where.
    let message = message.lines().next().unwrap_or(message).to_owned();
    ConfigError::Key {
        key: full,
        origin,
        message,
    }
}

fn validate(config: &Config) -> Result<(), ConfigError> {
    let bad = |key: &str, message: String| ConfigError::Key {
        key: key.to_owned(),
        origin: String::new(),
        message,
    };
    let url = reqwest::Url::parse(&config.upstream.base_url)
        .map_err(|e| bad("upstream.base_url", format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(
            "upstream.base_url",
            "must be an http or https URL".into(),
        ));
    }
    if config
        .upstream
        .api_key
        .as_deref()
        .is_some_and(str::is_empty)
    {
        return Err(bad(
            "upstream.api_key",
            "is empty; remove it to forward the client's key".into(),
        ));
    }
    if config.limits.max_body_bytes == 0 {
        return Err(bad(
            "limits.max_body_bytes",
            "must be greater than 0".into(),
        ));
    }
    if config.limits.max_concurrent_requests == 0 {
        return Err(bad(
            "limits.max_concurrent_requests",
            "must be greater than 0".into(),
        ));
    }
    if config.limits.max_sse_event_bytes == 0 {
        return Err(bad(
            "limits.max_sse_event_bytes",
            "must be greater than 0".into(),
        ));
    }
    validate_limits(&config.limits)?;
    if let Some(git) = &config.opencode.git
        && !matches!(git.as_str(), "yes" | "no")
    {
        return Err(bad(
            "opencode.git",
            format!("must be `yes` or `no`, not `{git}`"),
        ));
    }
    if let Some(tz) = &config.opencode.timezone
        && tz.parse::<chrono_tz::Tz>().is_err()
    {
        return Err(bad(
            "opencode.timezone",
            format!("unknown IANA time zone `{tz}`"),
        ));
    }
    if config.titles.max_chars == 0 {
        return Err(bad("titles.max_chars", "must be greater than 0".into()));
    }
    if config.titles.max_records == 0 {
        return Err(bad("titles.max_records", "must be greater than 0".into()));
    }
    if config.titles.lease < Duration::from_secs(1) {
        return Err(bad("titles.lease", "must be at least 1s".into()));
    }
    if let Some(bad_key) = config
        .auth
        .keys
        .iter()
        .position(|k| k.len() != 64 || !k.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad(
            "auth.keys",
            format!("entry {bad_key} is not a SHA-256 hash in hex (64 hex digits)"),
        ));
    }
    if config.inspect.enabled && config.inspect.capacity == 0 {
        return Err(bad("inspect.capacity", "must be greater than 0".into()));
    }
    validate_server(&config.server)?;
    if config.harness_header.parse::<http::HeaderName>().is_err() {
        return Err(bad(
            "harness_header",
            format!("`{}` is not a valid header name", config.harness_header),
        ));
    }
    Ok(())
}

/// `url` with the password of its userinfo (`http://user:PASS@host/`) and every query value
/// (`?api-version=<redacted>&sig=<redacted>`: Azure-style servers take keys and signatures
/// there) replaced, for logs and `check-config`. A URL with neither is returned as it was.
pub fn redacted_url(url: &str) -> String {
    const MARK: &str = "harness-proxy-redacted";
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() || parsed.query().is_some() => {
            if parsed.password().is_some() && parsed.set_password(Some(MARK)).is_err() {
                return "<redacted URL>".to_owned();
            }
            let query = parsed.query().map(redacted_query);
            parsed.set_query(None);
            let mut shown = parsed
                .to_string()
                .replace(&format!(":{MARK}@"), ":<redacted>@");
            if let Some(query) = query {
                // After the path, before any fragment.
                let at = shown.find('#').unwrap_or(shown.len());
                shown.insert_str(at, &format!("?{query}"));
            }
            shown
        }
        Ok(_) => url.to_owned(),
        // Unparseable URLs are refused by `validate`; never echo one that might hold a secret.
        Err(_) => "<unparseable URL>".to_owned(),
    }
}

/// A query with each value replaced (`k=<redacted>`); a bare item may be a secret itself.
fn redacted_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) => format!("{key}=<redacted>"),
            None if pair.is_empty() => String::new(),
            None => "<redacted>".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Allowed origins must be origins, allowed hosts bare names: a typo must not open the door wider.
fn validate_server(server: &ServerConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, message: String| ConfigError::Key {
        key: format!("server.{key}"),
        origin: String::new(),
        message,
    };
    let not_an_origin = |text: &str| {
        let text = text.trim();
        reqwest::Url::parse(text).map_or(true, |url| {
            !matches!(url.scheme(), "http" | "https")
                || url.host_str().is_none_or(str::is_empty)
                || url.path() != "/"
                || text.ends_with('/')
                || url.query().is_some()
                || url.fragment().is_some()
                || !url.username().is_empty()
                || url.password().is_some()
        })
    };
    if let Some(entry) = server.allowed_origins.iter().find(|o| not_an_origin(o)) {
        return Err(bad(
            "allowed_origins",
            format!(
                "`{entry}` is not an origin like `https://console.example:8443` (scheme, host, optional port; no path)"
            ),
        ));
    }
    if let Some(entry) = server.allowed_hosts.iter().find(|h| {
        let h = h.trim();
        h.is_empty()
            || (h != "*" && !(h.starts_with('[') && h.ends_with(']')) && h.contains(':'))
            || h.contains(['/', ' ', '@', '?', '#'])
    }) {
        return Err(bad(
            "allowed_hosts",
            format!(
                "`{entry}` is not a host name without a port, like `proxy.internal`, `10.0.0.7`, `[fd00::7]` or `*`"
            ),
        ));
    }
    Ok(())
}

/// The connection and memory bounds: none may be zero, and a body must fit the in-flight budget.
fn validate_limits(limits: &LimitsConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, message: &str| ConfigError::Key {
        key: format!("limits.{key}"),
        origin: String::new(),
        message: message.to_owned(),
    };
    let positive = [
        (
            "request_read_timeout",
            limits.request_read_timeout.is_zero(),
        ),
        (
            "request_idle_timeout",
            limits.request_idle_timeout.is_zero(),
        ),
        ("keep_alive_timeout", limits.keep_alive_timeout.is_zero()),
        ("max_connections", limits.max_connections == 0),
        ("max_title_subscribers", limits.max_title_subscribers == 0),
        ("max_answer_bytes", limits.max_answer_bytes == 0),
    ];
    if let Some((key, _)) = positive.iter().find(|(_, zero)| *zero) {
        return Err(bad(key, "must be greater than 0"));
    }
    if limits.max_inflight_body_bytes < limits.max_body_bytes {
        return Err(bad(
            "max_inflight_body_bytes",
            "must be at least `limits.max_body_bytes`, or no body of the largest size could be read",
        ));
    }
    // Budgets are taken in u32 steps (tokio's semaphore), so one body must fit in one.
    if u32::try_from(limits.max_body_bytes).is_err() {
        return Err(bad("max_body_bytes", "must be below 4 GiB"));
    }
    Ok(())
}

/// The effective config as TOML with every secret replaced, for `check-config`.
pub fn redacted_toml(config: &Config) -> String {
    let mut shown = config.clone();
    let hide = |v: &mut Option<String>| {
        if v.is_some() {
            *v = Some("<redacted>".to_owned());
        }
    };
    hide(&mut shown.upstream.api_key);
    shown.upstream.base_url = redacted_url(&shown.upstream.base_url);
    hide(&mut shown.auth.admin_token);
    hide(&mut shown.opencode.reasoning_key);
    if let StoreUrl::Redis(url) = &mut shown.titles.store {
        *url = StoreUrl::Redis(url.clone()).to_string();
    }
    toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn defaults_load_without_any_source() {
        let config =
            load(None, &BTreeMap::new(), &FlagOverrides::default()).expect("defaults are valid");
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.upstream.base_url, "https://api.openai.com/v1");
        assert_eq!(config.limits.max_body_bytes, 32 * 1024 * 1024);
        assert_eq!(config.shutdown_grace, Duration::from_secs(30));
    }

    #[test]
    fn precedence_is_file_then_env_then_flags() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:1\"\ndefault_harness = \"file\"\n[upstream]\nbase_url = \"http://file/v1\"\nmax_retries = 5\n")
            .expect("write");
        let env = env(&[
            ("HARNESS_PROXY__DEFAULT_HARNESS", "env"),
            ("HARNESS_PROXY__UPSTREAM__BASE_URL", "http://env/v1"),
            ("OTHER", "ignored"),
        ]);
        let flags = FlagOverrides {
            upstream: Some("http://flag/v1".into()),
            ..FlagOverrides::default()
        };
        let config = load(Some(&file), &env, &flags).expect("valid");
        assert_eq!(config.listen.to_string(), "127.0.0.1:1");
        assert_eq!(config.default_harness, "env");
        assert_eq!(config.upstream.base_url, "http://flag/v1");
        assert_eq!(config.upstream.max_retries, 5);
    }

    #[test]
    fn env_values_are_typed_and_strings_stay_strings() {
        let env = env(&[
            ("HARNESS_PROXY__UPSTREAM__MAX_RETRIES", "0"),
            (
                "HARNESS_PROXY__TITLES__HARNESSES",
                "[\"opencode\", \"passthrough\"]",
            ),
            ("HARNESS_PROXY__OPENCODE__TODAY", "Sat Nov 29 2025"),
            ("HARNESS_PROXY__TITLES__MODEL", "4"),
            ("HARNESS_PROXY__TITLES__TIMEOUT", "250ms"),
        ]);
        let config = load(None, &env, &FlagOverrides::default()).expect("valid");
        assert_eq!(config.upstream.max_retries, 0);
        assert_eq!(config.titles.harnesses, ["opencode", "passthrough"]);
        assert_eq!(config.opencode.today.as_deref(), Some("Sat Nov 29 2025"));
        assert_eq!(config.titles.model.as_deref(), Some("4"));
        assert_eq!(config.titles.timeout, Duration::from_millis(250));
    }

    #[test]
    fn unknown_keys_are_named_with_their_origin() {
        let err = load(
            None,
            &env(&[("HARNESS_PROXY__UPSTREAM__BASEURL", "x")]),
            &FlagOverrides::default(),
        )
        .expect_err("unknown key");
        let text = err.to_string();
        assert!(text.contains("`upstream.baseurl`"), "{text}");
        assert!(text.contains("HARNESS_PROXY__UPSTREAM__BASEURL"), "{text}");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[titles]\nordr = \"before\"\n").expect("write");
        let text = load(Some(&file), &BTreeMap::new(), &FlagOverrides::default())
            .expect_err("unknown key")
            .to_string();
        assert!(text.contains("`titles.ordr`"), "{text}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let cases = [
            ("HARNESS_PROXY__TITLES__ORDER", "sideways", "titles.order"),
            (
                "HARNESS_PROXY__LIMITS__MAX_BODY_BYTES",
                "lots",
                "limits.max_body_bytes",
            ),
            ("HARNESS_PROXY__SHUTDOWN_GRACE", "soon", "shutdown_grace"),
            (
                "HARNESS_PROXY__UPSTREAM__BASE_URL",
                "ftp://x",
                "upstream.base_url",
            ),
            (
                "HARNESS_PROXY__OPENCODE__TIMEZONE",
                "Mars/Base",
                "opencode.timezone",
            ),
            ("HARNESS_PROXY__LISTEN", "nowhere", "listen"),
            (
                "HARNESS_PROXY__LIMITS__REQUEST_READ_TIMEOUT",
                "0s",
                "limits.request_read_timeout",
            ),
            (
                "HARNESS_PROXY__LIMITS__MAX_CONNECTIONS",
                "0",
                "limits.max_connections",
            ),
            (
                "HARNESS_PROXY__LIMITS__MAX_INFLIGHT_BODY_BYTES",
                "1024",
                "limits.max_inflight_body_bytes",
            ),
            (
                "HARNESS_PROXY__LIMITS__MAX_TITLE_SUBSCRIBERS",
                "none",
                "limits.max_title_subscribers",
            ),
            (
                "HARNESS_PROXY__SERVER__ALLOWED_ORIGINS",
                "[\"https://console.example/ui\"]",
                "server.allowed_origins",
            ),
            (
                "HARNESS_PROXY__SERVER__ALLOWED_ORIGINS",
                "[\"null\"]",
                "server.allowed_origins",
            ),
            (
                "HARNESS_PROXY__SERVER__ALLOWED_HOSTS",
                "[\"proxy.internal:8080\"]",
                "server.allowed_hosts",
            ),
        ];
        for (var, value, key) in cases {
            let text = load(None, &env(&[(var, value)]), &FlagOverrides::default())
                .expect_err(var)
                .to_string();
            assert!(text.contains(&format!("`{key}`")), "{var}: {text}");
        }
        let flags = FlagOverrides {
            log_format: Some("xml".into()),
            ..FlagOverrides::default()
        };
        let text = load(None, &BTreeMap::new(), &flags)
            .expect_err("bad flag")
            .to_string();
        assert!(
            text.contains("`log_format`") && text.contains("--log-format"),
            "{text}"
        );
    }

    #[test]
    fn the_password_of_a_url_is_redacted() {
        assert_eq!(
            redacted_url("http://user:PASS@h:8/v1"),
            "http://user:<redacted>@h:8/v1"
        );
        assert_eq!(
            redacted_url("https://:p%40ss@h/v1/"),
            "https://:<redacted>@h/v1/"
        );
        assert_eq!(redacted_url("http://h/v1"), "http://h/v1");
        assert_eq!(redacted_url("http://user@h/v1"), "http://user@h/v1");
    }

    #[test]
    fn every_query_value_of_a_url_is_redacted() {
        assert_eq!(
            redacted_url("https://h/v1?api-version=2024-10-21&sig=SECRET"),
            "https://h/v1?api-version=<redacted>&sig=<redacted>"
        );
        assert_eq!(
            redacted_url("http://u:PASS@h/v1?SECRET#frag"),
            "http://u:<redacted>@h/v1?<redacted>#frag"
        );
    }

    #[test]
    fn redaction_hides_secrets() {
        let env = env(&[
            ("HARNESS_PROXY__UPSTREAM__API_KEY", "sk-secret-value"),
            ("HARNESS_PROXY__AUTH__ADMIN_TOKEN", "admin-secret"),
            ("HARNESS_PROXY__OPENCODE__REASONING_KEY", "seal-secret"),
        ]);
        let config = load(None, &env, &FlagOverrides::default()).expect("valid");
        assert_eq!(
            config.opencode.reasoning_key.as_deref(),
            Some("seal-secret")
        );
        let shown = redacted_toml(&config);
        assert!(
            !shown.contains("sk-secret-value")
                && !shown.contains("admin-secret")
                && !shown.contains("seal-secret"),
            "{shown}"
        );
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn the_store_url_is_parsed_once_into_its_kind() {
        let parse = |text: &str| {
            load(
                None,
                &env(&[("HARNESS_PROXY__TITLES__STORE", text)]),
                &FlagOverrides::default(),
            )
            .map(|c| c.titles.store)
        };
        assert_eq!(parse("memory").expect("memory"), StoreUrl::Memory);
        assert_eq!(
            parse("sqlite:///data/t.db").expect("sqlite"),
            StoreUrl::Sqlite(PathBuf::from("/data/t.db"))
        );
        assert_eq!(
            parse("redis://127.0.0.1:6379/3").expect("redis"),
            StoreUrl::Redis("redis://127.0.0.1:6379/3".into())
        );
        for bad in [
            "postgres://x",
            "sqlite://",
            "redis:///0",
            "redis://h:1/zero",
        ] {
            let text = parse(bad).expect_err(bad).to_string();
            assert!(text.contains("`titles.store`"), "{bad}: {text}");
        }
        let secret = StoreUrl::Redis("redis://:hunter2@cache:6379/0".into());
        assert!(!secret.to_string().contains("hunter2"), "{secret}");
        let mut config = Config::default();
        config.titles.store = secret;
        assert!(!redacted_toml(&config).contains("hunter2"));
    }
}
