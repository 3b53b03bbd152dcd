//! Start-up through the real binary: bad prompts and config stop it with the culprit named.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_harness-proxy"));
    command
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs to completion within 20 s; a binary that starts serving instead fails the test.
fn run_bounded(mut command: Command) -> std::process::Output {
    let mut child = command.spawn().expect("binary starts");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the binary kept running: it should have refused to start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_bad_template_file_stops_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("collaboration")).unwrap();
    std::fs::write(
        dir.path().join("collaboration/plan.md"),
        "Plan {{ mode }} now\n",
    )
    .unwrap();
    for command in ["serve", "check-config"] {
        let mut cmd = binary();
        cmd.args([command, "--listen", "127.0.0.1:0", "--prompts-dir"])
            .arg(dir.path());
        cmd.env("HARNESS_PROXY__TITLES__STORE", "memory");
        let output = run_bounded(cmd);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains("collaboration/plan.md"),
            "{command}: {stderr}"
        );
        assert!(
            stderr.contains("template placeholder `mode` is missing a value"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn an_identity_template_in_the_old_syntax_stops_start_up_naming_the_key() {
    let mut cmd = binary();
    cmd.args(["check-config"])
        .env("HARNESS_PROXY__TITLES__STORE", "memory")
        .env("HARNESS_PROXY__OPENCODE__MODEL_ID", "deepseek/{model}");
    let output = run_bounded(cmd);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`opencode.model_id`") && stderr.contains("write `{{model}}`"),
        "{stderr}"
    );
}

#[test]
fn check_config_prints_the_effective_config_without_secrets() {
    let mut cmd = binary();
    cmd.arg("check-config")
        .env("HARNESS_PROXY__UPSTREAM__API_KEY", "sk-very-secret")
        .env("HARNESS_PROXY__TITLES__STORE", "memory");
    let output = run_bounded(cmd);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stdout.contains("base_url = \"https://api.openai.com/v1\""),
        "{stdout}"
    );
    assert!(
        !stdout.contains("sk-very-secret") && stdout.contains("<redacted>"),
        "{stdout}"
    );

    let mut cmd = binary();
    cmd.arg("check-config")
        .env("HARNESS_PROXY__TITLES__ORDER", "sometimes");
    let output = run_bounded(cmd);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`titles.order`"));
}

#[test]
fn an_unknown_flag_value_is_named() {
    let mut cmd = binary();
    cmd.args(["check-config", "--log-format", "yaml"]);
    let output = run_bounded(cmd);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("`log_format`") && stderr.contains("--log-format"),
        "{stderr}"
    );
}

#[test]
fn a_missing_or_empty_seal_key_file_stops_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-key");
    std::fs::write(&empty, "\n").unwrap();
    let missing = dir.path().join("no-such-key");
    for (file, why) in [(&empty, "it is empty"), (&missing, "No such file")] {
        let mut cmd = binary();
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .env("HARNESS_PROXY__TITLES__STORE", "memory")
            .env("HARNESS_PROXY__OPENCODE__REASONING_KEY_FILE", file);
        let output = run_bounded(cmd);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("`opencode.reasoning_key_file`") && stderr.contains(why),
            "{stderr}"
        );
    }
}
