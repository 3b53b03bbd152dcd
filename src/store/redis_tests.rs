//! The real Redis for tests (`HARNESS_PROXY_TEST_REDIS_URL`, default the local one), each test
//! under its own key prefix. Without a Redis a test is skipped visibly, except in CI (`CI=true`),
//! where it fails: `SKIPPED <test>: <reason>` on the terminal past the output capture, and a file
//! of that name in the skip ledger `<target>/tmp/skipped/` (the integration tests'
//! `support::skip` keeps the same ledger).

use std::sync::Arc;

use redis::AsyncCommands;

use super::{LazyConnection, RedisServer};

/// The test Redis under a fresh prefix, or `None` (skipped, said so) when there is none.
pub(crate) async fn test_server() -> Option<Arc<RedisServer>> {
    let url = std::env::var("HARNESS_PROXY_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let server = Arc::new(RedisServer {
        conn: LazyConnection::new(&url).expect("URL parses"),
        prefix: format!("hp-test-{}", uuid::Uuid::new_v4()),
    });
    let entry = ledger_entry();
    let ping = match server.conn.get().await {
        Ok(mut conn) => redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match ping {
        Ok(()) => {
            if let Some(entry) = &entry {
                let _ = std::fs::remove_file(entry);
            }
            Some(server)
        }
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI needs Redis at {url}: {err}")
        }
        Err(err) => {
            use std::io::Write;
            let test = std::thread::current()
                .name()
                .unwrap_or("a Redis store test")
                .to_owned();
            let line = format!(
                "SKIPPED harness_proxy::{test}: no Redis at {url} ({err}); set HARNESS_PROXY_TEST_REDIS_URL"
            );
            if let Some(entry) = &entry
                && let Some(dir) = entry.parent()
            {
                let _ = std::fs::create_dir_all(dir);
                let _ = std::fs::write(entry, format!("{line}\n"));
            }
            // Straight to the process's stderr: `eprintln!` would be captured and shown only on failure.
            let _ = writeln!(std::io::stderr(), "{line}");
            None
        }
    }
}

/// This test's file in the skip ledger: `<target>/tmp/skipped/harness_proxy.<test>`, the test binary being
/// `<target>/<profile>/deps/harness_proxy-…` (unit tests get no `CARGO_TARGET_TMPDIR`).
fn ledger_entry() -> Option<std::path::PathBuf> {
    let test = std::thread::current().name()?.replace("::", ".");
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    Some(
        target
            .join("tmp/skipped")
            .join(format!("harness_proxy.{test}")),
    )
}

/// Deletes every key under the test's prefix.
pub(crate) async fn purge(server: &RedisServer) {
    let mut conn = server.conn.get().await.expect("conn");
    let keys: Vec<String> = conn
        .keys(format!("{}:*", server.prefix))
        .await
        .expect("keys");
    if !keys.is_empty() {
        let _: i64 = conn.del(keys).await.expect("del");
    }
}
