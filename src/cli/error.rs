//! `CliError`: why a command stopped, printed once by `main` (`harness-proxy: …`) before it exits 1.
//! Each cause keeps its own type (`#[from]`, `#[source]`); the words are the ones the user reads.

use std::path::PathBuf;

use crate::calibrate::CalibrateError;
use crate::config::ConfigError;
use crate::error::ProxyError;
use crate::prompts::PromptError;
use crate::server::open_files::TooFewFiles;
use crate::state::StartupError;
use crate::telemetry::LoggingError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Logging(#[from] LoggingError),
    #[error(transparent)]
    OpenFiles(#[from] TooFewFiles),
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error(transparent)]
    Prompts(#[from] PromptError),
    #[error(transparent)]
    Calibrate(#[from] CalibrateError),
    #[error("cannot listen on {listen}: {source}")]
    Listen {
        listen: String,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Server(#[source] std::io::Error),
    /// `calibrate` wrote nothing: stdin cannot answer its question.
    #[error(
        "calibrate: nothing written to {}: stdin is not a terminal, so no one can confirm the summary above; check it and rerun with --yes to write without asking",
        .0.display()
    )]
    NoTerminal(PathBuf),
    #[error("calibrate: nothing written: cannot read stdin: {0}")]
    ConfirmRead(#[source] std::io::Error),
    #[error("calibrate: nothing written to {} (not confirmed)", .0.display())]
    NotConfirmed(PathBuf),
    #[error("unknown harness `{name}`; known harnesses: {known}")]
    UnknownHarness { name: String, known: String },
    #[error("--header `{raw}`: {problem}")]
    Header { raw: String, problem: &'static str },
    #[error("cannot read stdin: {0}")]
    Stdin(#[source] std::io::Error),
    #[error("--protocol gemini needs --model (the model of the request's path)")]
    GeminiModel,
    /// `--protocol` names no served front (clap's own check keeps this from a command line).
    #[error("no client protocol is named `{name}`")]
    UnknownProtocol { name: String },
    #[error("the request has nothing to title (not a Chat Completions body, or a helper call)")]
    NothingToTitle,
    /// The request `rewrite` was given is one `serve` would refuse, for this reason.
    #[error(transparent)]
    Request(#[from] ProxyError),
}
