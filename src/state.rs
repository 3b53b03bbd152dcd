//! `AppState`: everything a handler shares, built once at start-up. No process-wide mutable state
//! lives anywhere else (the metrics recorder aside, which is global by the `metrics` crate's design).
//! `Host` is the process's environment and local UTC offset as start-up sees them: `cli` reads
//! them and injects them here (tests pass their own), so nothing here reads the process env or
//! time zone itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{FixedOffset, Offset};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::Semaphore;

use crate::clients::profiles::{ProfileError, Profiles};
use crate::config::Config;
use crate::conversation::seal::ReasoningSeal;
use crate::harness::opencode::tools::HostInfo;
use crate::harness::{Registry, Setup, SetupError};
use crate::memory::ConversationMemory;
use crate::prompts::{PromptError, Prompts};
use crate::store::{Backend, StoreError};
use crate::titles::TitleService;
use crate::titles::store;
use crate::upstream::{BuildError, EnvSource, Upstream};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Prompts(#[from] PromptError),
    #[error(transparent)]
    Harness(#[from] SetupError),
    #[error(transparent)]
    Upstream(#[from] BuildError),
    #[error("config key `clients.profiles`: {0}")]
    Profiles(#[from] ProfileError),
    #[error("config key `opencode.reasoning_key_file`: cannot read {path}: {reason}")]
    ReasoningKeyFile {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("config key `titles.store`: {0}")]
    Store(#[from] StoreError),
    #[error("config key `default_harness`: unknown harness `{name}`; known harnesses: {known}")]
    DefaultHarness { name: String, known: String },
    #[error("config key `titles.harnesses`: unknown harness `{name}`; known harnesses: {known}")]
    TitleHarness { name: String, known: String },
    /// The default harness cannot speak the upstream's wire (it has no Messages form).
    #[error(
        "config key `upstream.wire`: `{wire}` is not spoken by harness `{harness}` (`default_harness`); harnesses that speak it: {speakers}"
    )]
    Wire {
        wire: &'static str,
        harness: String,
        speakers: String,
    },
}

/// The process's surroundings as start-up sees them: its environment variables and its local UTC
/// offset. `cli` reads the real ones; tests, benches and tools pass their own (`Host::bare`), so
/// nothing below `cli` reads process state and no test has to change it.
#[derive(Clone)]
pub struct Host {
    /// Environment variables; kept by `upstream` to re-read a rotated key after a 401.
    pub env: EnvSource,
    /// The `<env>` date's zone when `opencode.timezone` is unset.
    pub utc_offset: FixedOffset,
}

impl Host {
    /// No variables at all, and UTC.
    pub fn bare() -> Self {
        Self {
            env: Arc::new(|_| None),
            utc_offset: chrono::Utc.fix(),
        }
    }

    /// What the harnesses need to know of the host.
    pub fn info(&self) -> HostInfo {
        HostInfo::from_env(&*self.env, self.utc_offset)
    }
}

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub harnesses: Registry,
    /// `harness_header`, parsed once (validated by config).
    pub harness_header: http::HeaderName,
    pub upstream: Arc<Upstream>,
    /// First-turn titles: one consumer of `memory`.
    pub titles: Arc<TitleService>,
    /// Conversation memory: ids of id-less clients, what was seen, the reasoning to carry.
    pub memory: Arc<ConversationMemory>,
    /// Bounds concurrent proxied requests; a permit lives as long as the response body.
    pub limiter: Arc<Semaphore>,
    /// Set once shutdown begins; `/readyz` then reports not ready.
    pub draining: AtomicBool,
    pub metrics: Option<PrometheusHandle>,
    /// `auth.keys`, decoded once.
    pub inbound_keys: crate::auth::InboundKeys,
    /// Bytes of request bodies held in memory, one permit per byte (`limits.max_inflight_body_bytes`).
    pub body_budget: Arc<Semaphore>,
    /// Live `/titles/{id}/stream` subscribers (`limits.max_title_subscribers`).
    pub title_subscribers: Arc<Semaphore>,
    /// Set when the shutdown grace is over and open responses are being cut: the access log then
    /// says `shutdown`, not `client_disconnected`.
    pub cutting: AtomicBool,
    /// Large rewrites running at once (one per core): they are CPU-bound, and each holds a parsed
    /// copy and a rebuilt copy of its body, so more at once only adds memory.
    pub large_rewrites: Arc<Semaphore>,
    /// `count_tokens` estimates running at once (`limits.max_token_counts`, one per core by
    /// default): they are CPU-bound, on the blocking pool.
    pub token_counts: Arc<Semaphore>,
    /// The console's request inspector; `None` unless `inspect.enabled`.
    pub inspect: Option<crate::inspect::Inspector>,
    /// The key of the reasoning seals put in clients' opaque fields (`opencode.reasoning_key`,
    /// else random for this process).
    pub reasoning_seal: Arc<ReasoningSeal>,
}

/// The seals' secret: `opencode.reasoning_key`, else the file `opencode.reasoning_key_file`
/// names (trimmed, as a mounted Secret often ends in a newline), else none.
fn reasoning_secret(config: &Config) -> Result<Option<String>, StartupError> {
    if let Some(secret) = &config.opencode.reasoning_key {
        return Ok(Some(secret.clone()));
    }
    let Some(path) = &config.opencode.reasoning_key_file else {
        return Ok(None);
    };
    let unreadable = |reason: String| StartupError::ReasoningKeyFile {
        path: path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(unreadable("it is empty".to_owned()));
    }
    Ok(Some(secret.to_owned()))
}

/// The seals' key: the configured secret, else a random one for this process (said when replicas
/// share a store, where that loses reasoning between them).
pub fn reasoning_seal(config: &Config) -> Result<Arc<ReasoningSeal>, StartupError> {
    Ok(Arc::new(match reasoning_secret(config)? {
        Some(secret) => ReasoningSeal::from_secret(&secret),
        None => {
            warn_unshared_seal_key(config);
            ReasoningSeal::from_bytes(random_key())
        }
    }))
}

/// Replicas sharing a Redis store are behind one balancer: a seal made by one opens only on the
/// one that made it unless they all have the same `opencode.reasoning_key`.
fn warn_unshared_seal_key(config: &Config) {
    if matches!(config.titles.store, crate::config::StoreUrl::Redis(_)) {
        tracing::warn!(
            "titles.store is shared (Redis) but opencode.reasoning_key is unset: each replica seals \
             reasoning with its own random key, so a Claude Code or Codex turn sent to another \
             replica loses its reasoning; give every replica the same key \
             (opencode.reasoning_key_file, or HARNESS_PROXY__OPENCODE__REASONING_KEY)"
        );
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// How long a `count_tokens` estimate waits for a slot before the client is told to retry: a
/// burst of counts, each a few milliseconds, is served, and a flood still gets its 529.
pub const TOKEN_COUNT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl AppState {
    /// Builds everything from config and the injected `host`.
    pub fn build(config: Config, host: Host) -> Result<Self, StartupError> {
        let prompts = Prompts::load(config.prompts_dir.as_deref())?;
        let harnesses = build_registry(&config, &prompts, &host)?;
        let upstream = Arc::new(
            Upstream::new(&config.upstream, host.env)?
                .forwarding_client_key(config.auth.forwards_client_key())
                .with_event_limit(config.limits.max_sse_event_bytes),
        );
        // One backend for everything the proxy keeps: title records, the memo, live notices.
        let backend = Backend::open(&config.titles.store, &config.titles.redis_prefix)?;
        let memory = Arc::new(ConversationMemory::open(
            &backend,
            config.titles.memo_read_timeout,
        )?);
        let titles = Arc::new(TitleService::with_memory(
            config.titles.clone(),
            store::open(&config.titles, &backend)?,
            &backend,
            memory.clone(),
            upstream.clone(),
        ));
        let harness_header = http::HeaderName::try_from(config.harness_header.as_str())
            .unwrap_or_else(|_| http::HeaderName::from_static("x-harness"));
        let inbound_keys = crate::auth::InboundKeys::from_hex(&config.auth.keys);
        let reasoning_seal = reasoning_seal(&config)?;
        Ok(Self(Arc::new(Inner {
            reasoning_seal,
            harness_header,
            titles,
            memory,
            limiter: Arc::new(Semaphore::new(config.limits.max_concurrent_requests)),
            body_budget: Arc::new(Semaphore::new(
                config
                    .limits
                    .max_inflight_body_bytes
                    .min(Semaphore::MAX_PERMITS),
            )),
            title_subscribers: Arc::new(Semaphore::new(
                config
                    .limits
                    .max_title_subscribers
                    .min(Semaphore::MAX_PERMITS),
            )),
            cutting: AtomicBool::new(false),
            large_rewrites: Arc::new(Semaphore::new(
                std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            )),
            token_counts: Arc::new(Semaphore::new(match config.limits.max_token_counts {
                0 => std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
                n => n.min(Semaphore::MAX_PERMITS),
            })),
            inspect: crate::inspect::Inspector::from_config(&config.inspect),
            config,
            harnesses,
            upstream,
            draining: AtomicBool::new(false),
            metrics: crate::telemetry::metrics_handle(),
            inbound_keys,
        })))
    }

    /// A slot for one `count_tokens` estimate: waits a little for one to free (Claude Code's
    /// `/context` sends a burst of ~25 at once), then gives up so the client retries.
    pub async fn token_count_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        tokio::time::timeout(TOKEN_COUNT_WAIT, self.token_counts.clone().acquire_owned())
            .await
            .ok()?
            .ok()
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub fn start_cutting(&self) {
        self.cutting.store(true, Ordering::SeqCst);
    }

    pub fn is_cutting(&self) -> bool {
        self.cutting.load(Ordering::SeqCst)
    }
}

/// 32 random bytes from the OS's generator. Without one the process cannot keep a secret, so it
/// does not start.
fn random_key() -> [u8; 32] {
    let mut key = [0; 32];
    getrandom::fill(&mut key).expect("the OS's random generator is unavailable");
    key
}

/// The harness registry, checked against the config's harness names.
pub fn build_registry(
    config: &Config,
    prompts: &Prompts,
    host: &Host,
) -> Result<Registry, StartupError> {
    let mut profile_files = Vec::with_capacity(config.clients.profiles.len());
    for path in &config.clients.profiles {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::File {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        profile_files.push((shown, text));
    }
    let profiles = Profiles::load(&profile_files)?;
    let registry = Registry::build(&Setup {
        config,
        prompts,
        host: host.info(),
        profiles,
    })?;
    if registry.get(&config.default_harness).is_none() {
        return Err(StartupError::DefaultHarness {
            name: config.default_harness.clone(),
            known: registry.names(),
        });
    }
    let wire = config.upstream.wire;
    if registry
        .get(&config.default_harness)
        .is_some_and(|h| !h.speaks(wire))
    {
        return Err(StartupError::Wire {
            wire: wire.name(),
            harness: config.default_harness.clone(),
            speakers: registry.speaking(wire),
        });
    }
    if let Some(name) = config
        .titles
        .harnesses
        .iter()
        .find(|h| registry.get(h).is_none())
    {
        return Err(StartupError::TitleHarness {
            name: name.clone(),
            known: registry.names(),
        });
    }
    Ok(registry)
}
