//! Commands: `serve` (default), `check-config`, `rewrite`, `calibrate`. Parsing lives here; `main` only calls
//! `run`. Start-up errors are returned, never `process::exit`ed, so they print once and exit 1.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::Offset;
use clap::{Args, Parser, Subcommand};

pub use self::error::CliError;
use crate::config::{self, Config, ConfigError, FlagOverrides};
use crate::prompts::Prompts;
use crate::state::{AppState, Host, build_registry};

mod error;
mod rewrite;

#[derive(Debug, Parser)]
#[command(
    name = "harness-proxy",
    version,
    about = "Chat Completions proxy that runs any coding agent as opencode"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the proxy (the default command).
    Serve,
    /// Print the effective config with secrets redacted; exit 1 if it is invalid.
    CheckConfig,
    /// Print the upstream body a request (read from stdin) would produce.
    Rewrite(rewrite::RewriteArgs),
    /// Capture a real client's prompts: look like an upstream to it, write them for --prompts-dir.
    Calibrate(CalibrateArgs),
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The client to calibrate against.
    #[arg(value_enum)]
    pub client: CalibrateClient,
    /// Directory to write the prompt files into (as `<harness>/…`, ready for --prompts-dir).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write what was captured without asking (otherwise a summary is shown and a terminal on
    /// stdin must answer `y`).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CalibrateClient {
    Opencode,
    Pi,
    QwenCode,
    MiniSweAgent,
    ClaudeCode,
}

/// Where `calibrate` listens unless `--listen` says otherwise (not the proxy's 8080).
const CALIBRATE_LISTEN: &str = "127.0.0.1:4141";

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// TOML config file.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:8080).
    #[arg(long, global = true, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Upstream base URL, up to and including /v1 (default https://api.openai.com/v1).
    #[arg(long, global = true, value_name = "URL")]
    pub upstream: Option<String>,
    /// Harness used when a request names none.
    #[arg(long, global = true, value_name = "NAME")]
    pub default_harness: Option<String>,
    /// Log format: human or json.
    #[arg(long, global = true, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Directory whose files replace the built-in prompts.
    #[arg(long, global = true, value_name = "DIR")]
    pub prompts_dir: Option<PathBuf>,
}

fn load_config(common: &CommonArgs) -> Result<Config, ConfigError> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let flags = FlagOverrides {
        listen: common.listen.clone(),
        upstream: common.upstream.clone(),
        default_harness: common.default_harness.clone(),
        log_format: common.log_format.clone(),
        prompts_dir: common.prompts_dir.clone(),
    };
    config::load(common.config.as_deref(), &env, &flags)
}

/// The process's real surroundings, read here and injected everywhere else: its environment (read
/// live, as the env source `upstream` keeps) and its local UTC offset, taken once at start-up.
fn process_host() -> Host {
    Host {
        env: std::sync::Arc::new(|name: &str| std::env::var(name).ok()),
        utc_offset: chrono::Local::now().offset().fix(),
    }
}

pub async fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(&cli.common).await,
        Command::CheckConfig => check_config(&cli.common),
        Command::Rewrite(args) => rewrite::run(&cli.common, &args),
        Command::Calibrate(args) => calibrate(&cli.common, &args).await,
    }
}

async fn calibrate(common: &CommonArgs, args: &CalibrateArgs) -> Result<ExitCode, CliError> {
    let agent = match args.client {
        CalibrateClient::Opencode => None,
        CalibrateClient::Pi => Some(crate::calibrate::agents::Agent::Pi),
        CalibrateClient::QwenCode => Some(crate::calibrate::agents::Agent::QwenCode),
        CalibrateClient::MiniSweAgent => Some(crate::calibrate::agents::Agent::MiniSweAgent),
        CalibrateClient::ClaudeCode => Some(crate::calibrate::agents::Agent::ClaudeCode),
    };
    if let Some(agent) = agent {
        return calibrate_agent(common, args, agent).await;
    }
    let listen = common.listen.as_deref().unwrap_or(CALIBRATE_LISTEN);
    let cannot_listen = |source| CliError::Listen {
        listen: listen.to_owned(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(cannot_listen)?;
    let addr = listener.local_addr().map_err(cannot_listen)?;
    let token = crate::calibrate::token();
    println!(
        "calibrate: listening on http://{addr}/{token}/v1
  set it as options.baseURL of an `@ai-sdk/openai-compatible` provider in opencode.json (the path
  holds a one-time token: requests without it are not captured),
  run `opencode run \"say hi\"` in an empty directory; stops once opencode sent its title and main requests (or on Ctrl-C)"
    );
    let captures = crate::calibrate::capture(listener, token, shutdown_signal()).await?;
    println!("calibrate: captured {} request(s)", captures.len());
    let host = process_host().info();
    let files = crate::calibrate::extract_files(&captures, &host)?;
    println!(
        "\nto be written under {}:",
        args.out.join("opencode").display()
    );
    for line in crate::calibrate::summary(&files) {
        println!("  {line}");
    }
    if !args.yes {
        confirm(&args.out)?;
    }
    let outcome = crate::calibrate::write_files(&args.out, &files, &captures, &host)?;
    for path in &outcome.written {
        println!("wrote {}", path.display());
    }
    for note in &outcome.notes {
        println!("note: {note}");
    }
    println!("\ndifferences from the built-in prompts:");
    for line in &outcome.differences {
        println!("  {line}");
    }
    if outcome.rewrite.is_empty() {
        println!(
            "\nrewrite check: the captured request, rewritten with these prompts, is what opencode sent"
        );
    } else {
        println!(
            "\nrewrite check: the captured request, rewritten with these prompts, differs at:"
        );
        for line in &outcome.rewrite {
            println!("  {line}");
        }
    }
    println!(
        "\nuse them: harness-proxy serve --prompts-dir {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `calibrate pi` / `qwen-code` / `mini-swe-agent` / `claude-code`: capture the agent's request, write its harness's
/// prompt files, and check that the harness rewrites the capture to what the agent sent.
async fn calibrate_agent(
    common: &CommonArgs,
    args: &CalibrateArgs,
    agent: crate::calibrate::agents::Agent,
) -> Result<ExitCode, CliError> {
    let listen = common.listen.as_deref().unwrap_or(CALIBRATE_LISTEN);
    let cannot_listen = |source| CliError::Listen {
        listen: listen.to_owned(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(cannot_listen)?;
    let addr = listener.local_addr().map_err(cannot_listen)?;
    let token = crate::calibrate::token();
    let base = agent.base_url(addr, &token);
    println!(
        "calibrate: listening on {base} (the path holds a one-time token: requests without it are not captured)\n{}",
        agent.how_to_point(&base)
    );
    let done = agent.done_fn();
    let captures =
        crate::calibrate::capture_until(listener, token, shutdown_signal(), done).await?;
    println!("calibrate: captured {} request(s)", captures.len());
    let files = agent
        .extract(&captures)
        .map_err(crate::calibrate::CalibrateError::from)?;
    let dir = args.out.join(agent.harness());
    println!("\nto be written under {}:", dir.display());
    for (name, text) in &files.files {
        println!(
            "  {name}: {} chars, first line: {}",
            text.chars().count(),
            crate::calibrate::shown_first_line(text)
        );
    }
    if !args.yes {
        confirm(&args.out)?;
    }
    for path in crate::calibrate::write_agent_files(&args.out, agent, &files)? {
        println!("wrote {}", path.display());
    }
    for note in &files.notes {
        println!("note: {note}");
    }
    let differences =
        crate::calibrate::agents_check::check(agent, &args.out, &captures, process_host().info());
    if differences.is_empty() {
        println!(
            "\nrewrite check: the captured request, rewritten by the {} harness with these prompts, has the system text and tools {} sent",
            agent.harness(),
            agent.harness()
        );
    } else {
        println!("\nrewrite check: differences:");
        for line in &differences {
            println!("  {line}");
        }
    }
    println!(
        "\nuse them: harness-proxy serve --prompts-dir {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks on stdin whether to write; anything but a terminal's `y` refuses.
fn confirm(out: &std::path::Path) -> Result<(), CliError> {
    use std::io::{BufRead, IsTerminal, Write};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CliError::NoTerminal(out.to_owned()));
    }
    print!("write these files? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(CliError::ConfirmRead)?;
    if crate::calibrate::is_yes(&answer) {
        Ok(())
    } else {
        Err(CliError::NotConfirmed(out.to_owned()))
    }
}

async fn serve(common: &CommonArgs) -> Result<ExitCode, CliError> {
    let mut config = load_config(common)?;
    crate::telemetry::init_logging(&config)?;
    crate::server::open_files::fit(&mut config.limits)?;
    let listen = config.listen;
    let state = AppState::build(config, process_host())?;
    let listener = bind(listen).map_err(|source| CliError::Listen {
        listen: listen.to_string(),
        source,
    })?;
    let upstream = config::redacted_url(&state.config.upstream.base_url);
    let credential = upstream_credential(&state);
    tracing::info!(listen = %listen, upstream = %upstream, upstream_credential = %credential, default_harness = %state.config.default_harness, "harness-proxy serving");
    crate::server::run(listener, state, shutdown_signal())
        .await
        .map_err(CliError::Server)?;
    tracing::info!("harness-proxy stopped");
    Ok(ExitCode::SUCCESS)
}

/// What authenticates requests upstream, and, when the client's key is not forwarded, why.
fn upstream_credential(state: &AppState) -> String {
    if let Some(credential) = state.upstream.credential() {
        return credential.to_owned();
    }
    let why = if state.config.auth.forward_client_key == Some(false) {
        "auth.forward_client_key = false"
    } else {
        "auth.keys is set"
    };
    format!("none (the client's key is not forwarded: {why})")
}

/// Connections the kernel may queue before they are accepted: tokio's default (1024) drops the
/// SYNs of a larger burst, which clients see as connect timeouts.
const LISTEN_BACKLOG: u32 = 4096;

fn bind(listen: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if listen.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(listen)?;
    socket.listen(LISTEN_BACKLOG)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

fn check_config(common: &CommonArgs) -> Result<ExitCode, CliError> {
    let config = load_config(common)?;
    let prompts = Prompts::load(config.prompts_dir.as_deref())?;
    build_registry(&config, &prompts, &process_host())?;
    print!("{}", config::redacted_toml(&config));
    Ok(ExitCode::SUCCESS)
}
