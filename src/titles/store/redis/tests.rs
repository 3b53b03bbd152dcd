//! The Redis store against the real Redis (`store::redis_tests`: skipped visibly without one,
//! except in CI), each test under its own key prefix.

use std::time::Duration;

use chrono::Utc;
use redis::AsyncCommands;

use super::RedisStore;
use crate::store::redis_tests::test_server;
use crate::titles::store::TitleStore;

pub(crate) async fn test_store(max_records: usize) -> Option<RedisStore> {
    // Records in the contract are from 2023: keep them well past now.
    let retention = Duration::from_secs(100 * 365 * 24 * 3600);
    Some(RedisStore::on(test_server().await?, retention, max_records))
}

/// Deletes every key under the test's prefix.
pub(crate) async fn purge(store: &RedisStore) {
    crate::store::redis_tests::purge(&store.server).await;
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
