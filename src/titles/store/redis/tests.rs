//! The Redis store against the real Redis (`HARNESS_PROXY_TEST_REDIS_URL`, default the local one), each test
//! under its own key prefix. Without a Redis a test is skipped visibly, except in CI (`CI=true`), where it fails:
//! `SKIPPED <test>: <reason>` on the terminal past the output capture, and a file of that name in the skip ledger
//! `<target>/tmp/skipped/` (the integration tests' `support::skip` keeps the same ledger).

use std::time::Duration;

use chrono::Utc;
use redis::AsyncCommands;

use super::RedisStore;
use crate::titles::store::TitleStore;

pub(crate) async fn test_store(max_records: usize) -> Option<RedisStore> {
    let url = std::env::var("HARNESS_PROXY_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("hp-test-{}", uuid::Uuid::new_v4());
    // Records in the contract are from 2023: keep them well past now.
    let retention = Duration::from_secs(100 * 365 * 24 * 3600);
    let store = RedisStore::open(&url, &prefix, retention, max_records).expect("URL parses");
    let entry = ledger_entry();
    match store.ping().await {
        Ok(()) => {
            if let Some(entry) = &entry {
                let _ = std::fs::remove_file(entry);
            }
            Some(store)
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
pub(crate) async fn purge(store: &RedisStore) {
    let mut conn = store.conn().await.expect("conn");
    let keys: Vec<String> = conn
        .keys(format!("{}:*", store.prefix))
        .await
        .expect("keys");
    if !keys.is_empty() {
        let _: i64 = conn.del(keys).await.expect("del");
    }
}

#[tokio::test]
async fn satisfies_the_store_contract() {
    let Some(store) = test_store(100).await else {
        return;
    };
    let store = std::sync::Arc::new(store);
    crate::titles::store::contract::run(store.clone()).await;
    purge(&store).await;
}

#[tokio::test]
async fn records_expire_and_are_bounded() {
    let Some(store) = test_store(2).await else {
        return;
    };
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        let mut r = crate::titles::store::contract::record("o", id, i as i64);
        r.created_at = Utc::now() + chrono::Duration::seconds(i as i64);
        store.claim(&r).await.expect("claim");
    }
    let ids: Vec<String> = store
        .list(None, None, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["c", "b"], "max_records evicts the oldest");
    let mut conn = store.conn().await.expect("conn");
    let ttl: i64 = conn.pttl(store.record_key("o", "c")).await.expect("pttl");
    let retention = i64::try_from(store.retention.as_millis()).expect("fits");
    assert!(
        ttl > 0 && ttl <= retention,
        "record expires with the retention: {ttl}"
    );
    purge(&store).await;
}
