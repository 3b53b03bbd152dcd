//! Thin entry point: parse the command line and hand over to `cli::run`. Also the global
//! allocator, jemalloc (`tikv-jemallocator`; its decay settings are compiled in from
//! `.cargo/config.toml`). Must not: hold logic.

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = harness_proxy::cli::Cli::parse();
    match harness_proxy::cli::run(cli).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("harness-proxy: {err}");
            ExitCode::FAILURE
        }
    }
}
