//! Thin entry point: parse the command line and hand over to `cli::run`.

use std::process::ExitCode;

use clap::Parser;

// The rewrite path allocates many small strings; mimalloc cuts its cost by 7–22%
// (benches/hot_path.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
