//! Redis for tests: the shared one (`HARNESS_PROXY_TEST_REDIS_URL`, default the machine's
//! 127.0.0.1:6379) under a fresh key prefix per test, or a private `redis-server` on a free port
//! that a test may stop and restart. Without Redis a test is skipped visibly (`support::skip`:
//! a `SKIPPED` line and an entry in the skip ledger), except with `CI=true`, where it fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use harness_proxy::config::{Config, StoreUrl};

use super::skip::{ran, skip};

/// The shared test Redis, or `None` (skip) after saying why.
pub async fn shared_url(test: &str) -> Option<String> {
    let url = std::env::var("HARNESS_PROXY_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    // Decided (ran or skipped, recorded) before the summary may read the run's skips.
    let checking = super::skip::Checking::start();
    let decided = match ping(&url).await {
        Ok(()) => {
            ran(test);
            Some(url)
        }
        Err(err) => skip(
            test,
            &format!("no Redis at {url} ({err}); set HARNESS_PROXY_TEST_REDIS_URL to run it"),
        ),
    };
    drop(checking);
    decided
}

async fn ping(url: &str) -> Result<(), String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let mut conn = tokio::time::timeout(
        Duration::from_secs(2),
        client.get_multiplexed_async_connection(),
    )
    .await
    .map_err(|_| "no answer in 2s".to_owned())?
    .map_err(|e| e.to_string())?;
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Points `config` at Redis under a prefix no other test uses.
pub fn use_redis(config: &mut Config, url: &str, prefix: &str) {
    config.titles.store = StoreUrl::Redis(url.to_owned());
    config.titles.redis_prefix = prefix.to_owned();
}

/// A key prefix of the test's own; dropping it deletes every key under it.
pub struct Prefix {
    url: String,
    pub name: String,
}

pub fn fresh_prefix(url: &str) -> Prefix {
    Prefix {
        url: url.to_owned(),
        name: format!("hp-it-{}", uuid::Uuid::new_v4()),
    }
}

impl Drop for Prefix {
    fn drop(&mut self) {
        let Ok(mut conn) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
        else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.name))
            .query(&mut conn)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: redis::RedisResult<i64> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}

/// A `redis-server` of the test's own, persisting every write (append-only file, fsync always)
/// in a temporary directory, so it can be killed and restarted without losing what it took.
pub struct PrivateRedis {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    pub async fn start(test: &str) -> Option<Self> {
        let Some(binary) = which("redis-server") else {
            return skip(
                test,
                "redis-server is not installed (apt-get install redis-server)",
            );
        };
        ran(test);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let mut redis = Self {
            dir: tempfile::tempdir().expect("tempdir"),
            port,
            child: None,
        };
        redis.spawn(&binary).await;
        Some(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    async fn spawn(&mut self, binary: &PathBuf) {
        let child = Command::new(binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        for _ in 0..200 {
            if ping(&self.url()).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("private redis-server did not answer within 10 s");
    }

    /// Kills the server at once (as a crash would).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (`SIGSTOP`): connections stay open and commands queue unanswered, as
    /// with a hung host.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused server (`SIGCONT`): it answers what queued meanwhile.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, which: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill")
            .args([which, &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {which} {pid}");
    }

    /// Starts it again on the same port and directory.
    pub async fn restart(&mut self) {
        let binary = which("redis-server").expect("was there at start");
        self.spawn(&binary).await;
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|path| path.is_file())
}
