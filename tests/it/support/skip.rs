//! Skips that show: a test whose outside dependency (Redis, a headless Chromium) is missing says
//! `SKIPPED <test>: <reason>` on the terminal even when `cargo test` captures its output, and
//! leaves a file of that name in the skip ledger, `<target>/tmp/skipped/`; the same test run with
//! its dependency removes it. With `CI=true` a skip is a failure instead. `.ci/run` empties the
//! ledger before `cargo test` and fails when the run left anything in it.
//!
//! libtest counts a skipped test as passed, so the binary also says how many it skipped: each
//! `SKIPPED` line carries the count so far, and `zz_skips_summary` (the binary's last test by name,
//! so libtest starts it last) prints the run's count by reason (`summary`) just before the closing
//! `test result` line. Tests run in parallel, so the summary first waits for dependency checks
//! still under way (`Checking`: a Redis ping may take its timeout); every check happens at the
//! start of its test, so a test started before the summary has made its decision by then.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// This binary's skips so far and the dependency checks under way: what the summary reads.
struct Run {
    /// The `SKIPPED` lines of this run, in the order they were said.
    skipped: Vec<String>,
    /// Dependency checks started and not yet decided.
    checking: usize,
}

static RUN: Mutex<Run> = Mutex::new(Run {
    skipped: Vec::new(),
    checking: 0,
});
/// Told when a check is decided.
static DECIDED: Condvar = Condvar::new();

fn run() -> std::sync::MutexGuard<'static, Run> {
    // A test that panicked holding the lock left the record whole: each change is one statement.
    RUN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A dependency check under way (a Redis ping): the summary waits until it is dropped.
pub struct Checking(());

impl Checking {
    pub fn start() -> Self {
        run().checking += 1;
        Self(())
    }
}

impl Drop for Checking {
    fn drop(&mut self) {
        run().checking -= 1;
        DECIDED.notify_all();
    }
}

/// The skip ledger: one file per skipped test, holding the reason.
pub fn ledger() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped")
}

/// The running test's name (libtest names each test's thread after it), else `label`.
fn test_name(label: &str) -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => label.to_owned(),
    }
}

fn entry(dir: &Path, test: &str) -> PathBuf {
    dir.join(test.replace("::", "."))
}

/// Records that `test` did not run, and why, in `dir`; returns the line that says so.
pub fn record(dir: &Path, test: &str, reason: &str) -> String {
    let line = format!("SKIPPED {test}: {reason}");
    std::fs::create_dir_all(dir).expect("create the skip ledger");
    std::fs::write(entry(dir, test), format!("{line}\n")).expect("write the skip ledger");
    line
}

/// Removes `test`'s entry from `dir`: it ran.
pub fn clear(dir: &Path, test: &str) {
    let _ = std::fs::remove_file(entry(dir, test));
}

/// The test (`label` when its name is unknown) cannot run here: fails under `CI=true`, else
/// says so past the output capture and records it in the ledger.
pub fn skip<T>(label: &str, reason: &str) -> Option<T> {
    let test = test_name(label);
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: CI must run it: {reason}"
    );
    let line = record(&ledger(), &test, reason);
    let count = {
        let mut run = run();
        run.skipped.push(line.clone());
        run.skipped.len()
    };
    // Straight to the process's stderr: `eprintln!` would be captured and shown only on failure.
    let _ = writeln!(
        std::io::stderr(),
        "{line} [{count} skipped so far in this run; ls {}]",
        ledger().display()
    );
    None
}

/// The closing lines of a run: how many of its tests were skipped (libtest counted them as
/// passed) and why, by reason; `lines` are the run's `SKIPPED` lines.
pub fn summary_of(lines: &[String], ledger: &Path) -> String {
    if lines.is_empty() {
        return "skip summary: no test of this run was skipped".to_owned();
    }
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for line in lines {
        let reason = line.split_once(": ").map_or(line.as_str(), |(_, why)| why);
        match reasons.iter_mut().find(|(known, _)| *known == reason) {
            Some((_, count)) => *count += 1,
            None => reasons.push((reason, 1)),
        }
    }
    let mut out = format!(
        "skip summary: {} of this run's tests were SKIPPED (counted as passed below), each listed \
         above and in {}:",
        lines.len(),
        ledger.display()
    );
    for (reason, count) in reasons {
        out.push_str(&format!("\n  {count} × {reason}"));
    }
    out
}

/// Prints this run's skip summary past the output capture, once the checks under way are
/// decided (bounded: a check never takes longer than its own timeout).
pub fn summary() {
    let run = run();
    let (run, _) = DECIDED
        .wait_timeout_while(run, Duration::from_secs(10), |run| run.checking > 0)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let text = summary_of(&run.skipped, &ledger());
    drop(run);
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// The test (`label` when its name is unknown) has what it needs: any earlier skip is void.
pub fn ran(label: &str) {
    clear(&ledger(), &test_name(label));
}

#[test]
fn a_skip_is_recorded_and_a_later_run_clears_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = record(dir.path(), "replicas::x", "no Redis");
    assert_eq!(line, "SKIPPED replicas::x: no Redis");
    let written = std::fs::read_to_string(dir.path().join("replicas.x")).expect("recorded");
    assert_eq!(written, "SKIPPED replicas::x: no Redis\n");
    clear(dir.path(), "replicas::x");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    assert_eq!(
        test_name("label"),
        "support::skip::a_skip_is_recorded_and_a_later_run_clears_it"
    );
}

#[test]
fn the_summary_counts_the_skips_by_reason() {
    let ledger = Path::new("target/tmp/skipped");
    assert_eq!(
        summary_of(&[], ledger),
        "skip summary: no test of this run was skipped"
    );
    let lines = [
        "SKIPPED replicas::a: no Redis at redis://x".to_owned(),
        "SKIPPED ui::b: chromium is not installed".to_owned(),
        "SKIPPED titles::c: no Redis at redis://x".to_owned(),
    ];
    assert_eq!(
        summary_of(&lines, ledger),
        "skip summary: 3 of this run's tests were SKIPPED (counted as passed below), each listed \
         above and in target/tmp/skipped:\n  2 × no Redis at redis://x\n  1 × chromium is not \
         installed"
    );
}
