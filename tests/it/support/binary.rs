//! The real binary as a child process, for what only a process shows: its log lines.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Proxy {
    child: Option<Child>,
    pub base: String,
}

impl Proxy {
    /// Starts `harness-proxy serve` in front of `upstream` with `env` (nothing else inherited)
    /// and waits until `/healthz` answers.
    pub async fn start(upstream: &str, env: &[(&str, &str)]) -> Self {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_harness-proxy"));
        command
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--upstream",
                upstream,
            ])
            .env_clear()
            .env("HARNESS_PROXY__TITLES__STORE", "memory")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let proxy = Self {
            child: Some(command.spawn().expect("binary starts")),
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        for _ in 0..400 {
            if client
                .get(format!("{}/healthz", proxy.base))
                .send()
                .await
                .is_ok()
            {
                return proxy;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the proxy did not start: {}", proxy.logs());
    }

    /// The process id, to read `/proc/<pid>/status`.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends SIGTERM, waits (bounded) for the process to exit, and returns its exit success and
    /// everything it logged.
    pub fn terminate(mut self) -> (bool, String) {
        let Some(mut child) = self.child.take() else {
            return (false, String::new());
        };
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while child.try_wait().expect("wait").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "no exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().expect("output");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Stops the process and returns everything it logged.
    pub fn logs(mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return String::new();
        };
        let _ = child.kill();
        let output = child.wait_with_output().expect("output");
        String::from_utf8_lossy(&output.stderr).into_owned()
    }
}

impl Drop for Proxy {
    /// A failing test must not leave the process behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
