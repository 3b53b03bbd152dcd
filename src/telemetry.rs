//! Logging (`tracing`, human or JSON) and the Prometheus recorder.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

/// Installs the global subscriber. `RUST_LOG` is not consulted: `log_level` is the one knob.
pub fn init_logging(config: &Config) -> Result<(), String> {
    let filter = EnvFilter::try_new(&config.log_level).map_err(|e| {
        format!(
            "config key `log_level`: invalid filter `{}`: {e}",
            config.log_level
        )
    })?;
    // Colour only for a person at a terminal; files and log collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let result = match config.log_format {
        LogFormat::Human => builder.with_target(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    result.map_err(|e| format!("cannot install the logger: {e}"))
}

/// The process's Prometheus recorder, installed on first use (tests build many apps per process).
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| PrometheusBuilder::new().install_recorder().ok())
        .clone()
}
