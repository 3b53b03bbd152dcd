//! Logging (`tracing`, human or JSON) and the Prometheus recorder.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

mod plain;

/// Why the logger could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("config key `log_level`: invalid filter `{filter}`: {source}")]
    Filter {
        filter: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("cannot install the logger: {0}")]
    Install(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Installs the global subscriber. `RUST_LOG` is not consulted: `log_level` is the one knob.
pub fn init_logging(config: &Config) -> Result<(), LoggingError> {
    let filter = EnvFilter::try_new(&config.log_level).map_err(|source| LoggingError::Filter {
        filter: config.log_level.clone(),
        source,
    })?;
    // Colour only for a person at a terminal; files and log collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_timer(plain::UtcMicros)
        .with_writer(std::io::stderr);
    let result = match config.log_format {
        LogFormat::Human if ansi => builder.with_target(false).try_init(),
        // The same text for less work per line (the access log writes one per request).
        LogFormat::Human => builder
            .with_target(false)
            .fmt_fields(plain::PlainFields)
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    result.map_err(LoggingError::Install)
}

/// The process's Prometheus recorder, installed on first use (tests build many apps per process).
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), SECONDS_BUCKETS)
                .ok()?
                .install_recorder()
                .ok()?;
            describe_metrics();
            spawn_upkeep(handle.clone());
            Some(handle)
        })
        .clone()
}

/// How often the recorder's histogram samples are folded into their buckets.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Folds the recorder's pending histogram samples into their buckets every `UPKEEP_EVERY`.
/// A recorder installed with `install_recorder` keeps every recorded sample until a scrape or
/// an upkeep drains it, so a proxy nobody scrapes would grow by each request's durations without
/// bound (metrics-rs/metrics#467). A plain thread: the recorder outlives any one runtime (tests
/// build many apps per process), and the work is a few locks every few seconds.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_EVERY);
                handle.run_upkeep();
            }
        });
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "cannot start the metrics upkeep thread; histogram samples are drained only by scrapes of /metrics");
    }
}

/// Buckets of every `_seconds` histogram: from the proxy's own sub-millisecond work to a model's
/// minutes-long answer.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// `# HELP` lines: what each metric answers (docs/metrics.md has the list with its labels).
fn describe_metrics() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "harness_proxy_requests_total",
        "HTTP requests by harness, client protocol, status class and status code"
    );
    describe_histogram!(
        "harness_proxy_request_duration_seconds",
        "Wall time of a request until its response body ended"
    );
    describe_histogram!(
        "harness_proxy_overhead_seconds",
        "Time the proxy itself spent on a proxied request: wall time minus waits on the client and the upstream"
    );
    describe_histogram!(
        "harness_proxy_upstream_first_byte_seconds",
        "Time from sending a proxied request upstream to its response head (retries included)"
    );
    describe_gauge!(
        "harness_proxy_proxied_requests_in_flight",
        "Proxied requests whose response has not ended, by harness and client protocol"
    );
    describe_gauge!(
        "harness_proxy_proxied_streams_in_flight",
        "Proxied event streams still being sent, by harness and client protocol"
    );
    describe_counter!(
        "harness_proxy_titles_total",
        "Titles by outcome (done, failed)"
    );
    describe_histogram!(
        "harness_proxy_title_duration_seconds",
        "Time from claiming a conversation's title to its outcome"
    );
    describe_counter!(
        "harness_proxy_title_store_errors_total",
        "Failed title store operations by operation"
    );
    describe_counter!(
        "harness_proxy_translated_tool_calls_total",
        "Upstream tool calls under an opencode name mapped back to the client's tool, by profile, tool and outcome"
    );
    describe_counter!(
        "harness_proxy_unmapped_tool_calls_total",
        "Upstream tool calls the client has no mapping for, passed through unchanged, by profile and known tool name or other"
    );
    describe_counter!(
        "harness_proxy_dropped_tools_total",
        "Client tools not sent upstream (no opencode counterpart, or no Chat Completions form), by known name or other"
    );
    describe_counter!(
        "harness_proxy_passthrough_tools_total",
        "Client tools with no opencode counterpart sent upstream as the client defined them, by known name or other"
    );
    describe_counter!(
        "harness_proxy_reasoning_memo_store_total",
        "The reasoning memo's reads and writes of the shared store, by operation and outcome"
    );
    describe_counter!(
        "harness_proxy_reasoning_memo_evicted_total",
        "Answers the reasoning memo dropped at a write to stay within a bound, by memo (local, store) and bound (caller, total)"
    );
    describe_counter!(
        "harness_proxy_upstream_retries_total",
        "Upstream requests retried, by reason"
    );
    describe_counter!(
        "harness_proxy_errors_total",
        "Error answers of the proxy (its own and the upstream's failures before the answer began), by kind"
    );
    describe_counter!(
        "harness_proxy_upstream_stream_errors_total",
        "Upstream streams that failed after the answer had begun"
    );
}
