//! Skips that show: a test whose outside dependency (Redis, a headless Chromium) is missing says
//! `SKIPPED <test>: <reason>` on the terminal even when `cargo test` captures its output, and
//! leaves a file of that name in the skip ledger, `<target>/tmp/skipped/`; the same test run with
//! its dependency removes it. With `CI=true` a skip is a failure instead. `.ci/run` empties the
//! ledger before `cargo test` and fails when the run left anything in it.

use std::io::Write;
use std::path::{Path, PathBuf};

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
    // Straight to the process's stderr: `eprintln!` would be captured and shown only on failure.
    let _ = writeln!(std::io::stderr(), "{line}");
    None
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
