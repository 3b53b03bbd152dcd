//! The real binary as a child process, for what only a process shows: its log lines.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Proxy {
    child: Option<Child>,
    pub base: String,
    /// Everything the process logged so far, read as it comes (a full pipe would block it).
    logged: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Starts `harness-proxy serve` in front of `upstream` with `env` (nothing else inherited)
    /// and waits until `/healthz` answers.
    pub async fn start(upstream: &str, env: &[(&str, &str)]) -> Self {
        Self::start_limited(upstream, env, None).await
    }

    /// `start`, under a shell's `ulimit -n open_files` when given.
    pub async fn start_limited(
        upstream: &str,
        env: &[(&str, &str)],
        open_files: Option<u64>,
    ) -> Self {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        // `HARNESS_PROXY_TEST_BINARY` measures another build (the release one) by hand.
        let binary = std::env::var("HARNESS_PROXY_TEST_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_harness-proxy").to_owned());
        let binary = binary.as_str();
        let mut command = match open_files {
            None => Command::new(binary),
            Some(limit) => {
                let mut sh = Command::new("/bin/sh");
                sh.args([
                    "-c",
                    "ulimit -n \"$0\" && exec \"$@\"",
                    &limit.to_string(),
                    binary,
                ]);
                sh
            }
        };
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
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("binary starts");
        let logged = Arc::new(Mutex::new(Vec::new()));
        let reader = child.stderr.take().map(|mut stderr| {
            let logged = logged.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    logged.lock().expect("lock").extend_from_slice(&buf[..n]);
                }
            })
        });
        let proxy = Self {
            child: Some(child),
            base: format!("http://127.0.0.1:{port}"),
            logged,
            reader,
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

    /// What the process has logged so far.
    pub fn logs_so_far(&self) -> String {
        String::from_utf8_lossy(&self.logged.lock().expect("lock")).into_owned()
    }

    /// Waits (bounded) until the logs satisfy `done`, then returns them.
    pub async fn wait_for_logs(&self, done: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let logs = self.logs_so_far();
            if done(&logs) {
                return logs;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the expected log lines did not come:\n{logs}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the stderr reader to see the end, then returns everything logged.
    fn drained_logs(&mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.logs_so_far()
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
        let status = child.wait().expect("exit status");
        (status.success(), self.drained_logs())
    }

    /// Stops the process and returns everything it logged.
    pub fn logs(mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return String::new();
        };
        let _ = child.kill();
        let _ = child.wait();
        self.drained_logs()
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
