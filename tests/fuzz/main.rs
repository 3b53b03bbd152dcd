//! Fuzz targets on the stable toolchain: proptest generates inputs (structured where a parser
//! would reject noise at once) and mutates the committed corpus under `tests/fuzz/corpus/<target>/`,
//! for `HARNESS_PROXY_FUZZ_SECS` seconds per target (default 2; `.ci/run` gives more). Each input
//! runs under `catch_unwind`; a panic prints the seed and the input, and becomes a unit test.
//!
//! `HARNESS_PROXY_FUZZ_SEED` (a number) replays a run.

#![allow(clippy::unwrap_used)]

mod strategies;
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn budget() -> Duration {
    let secs = std::env::var("HARNESS_PROXY_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs.max(0.0))
}

fn seed() -> u64 {
    std::env::var("HARNESS_PROXY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// The committed corpus of `target`, one input per file, in name order.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// Runs `check` on every corpus input, then on generated inputs until the time budget is spent.
/// Returns how many inputs were tried.
pub fn fuzz<S: Strategy>(
    target: &str,
    corpus: &[S::Value],
    strategy: S,
    check: impl Fn(&S::Value),
) -> usize
where
    S::Value: std::fmt::Debug,
{
    let run = |input: &S::Value, origin: &str| {
        if catch_unwind(AssertUnwindSafe(|| check(input))).is_err() {
            panic!("fuzz target `{target}` panicked on {origin} input: {input:?}");
        }
    };
    for input in corpus {
        run(input, "corpus");
    }
    let seed = seed();
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let deadline = Instant::now() + budget();
    let mut tried = corpus.len();
    while Instant::now() < deadline {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        run(
            &input,
            &format!("generated (HARNESS_PROXY_FUZZ_SEED={seed})"),
        );
        tried += 1;
    }
    eprintln!("fuzz `{target}`: {tried} inputs, no panic (seed {seed})");
    tried
}

#[test]
fn sse_decoder() {
    targets::sse();
}

#[test]
fn opencode_rewrite() {
    targets::opencode();
}

#[test]
fn tool_arguments() {
    targets::args();
}

#[test]
fn title_sanitizer() {
    targets::title();
}

#[test]
fn text_actions() {
    targets::text_actions();
}
