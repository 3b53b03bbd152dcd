//! The memo's keys in the title store's Redis: `P:rm:{key}` (`P` = `titles.redis_prefix`), a
//! string set with `PX`, so Redis itself forgets each entry after its TTL (and under
//! `maxmemory` with a volatile policy, before). Its own lazily made connection, failing fast
//! while Redis is down.
//!
//! Owns: the `P:rm:` keys. Must not: touch the title records' keys.

use std::time::Duration;

use async_trait::async_trait;

use super::shared::SharedMemo;
use crate::titles::store::StoreError;
use crate::titles::store::redis::{LazyConnection, classify};

pub struct RedisMemo {
    conn: LazyConnection,
    prefix: String,
}

impl RedisMemo {
    /// Parses the URL; connecting waits for the first use.
    pub fn open(url: &str, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self {
            conn: LazyConnection::new(url)?,
            prefix: prefix.to_owned(),
        })
    }

    fn entry(&self, key: &str) -> String {
        format!("{}:rm:{key}", self.prefix)
    }
}

#[async_trait]
impl SharedMemo for RedisMemo {
    async fn put(&self, keys: &[String], text: &str, ttl: Duration) -> Result<(), StoreError> {
        let mut conn = self.conn.get().await?;
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.cmd("SET")
                .arg(self.entry(key))
                .arg(text)
                .arg("PX")
                .arg(ttl)
                .ignore();
        }
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| classify(&e))
    }

    async fn get(&self, keys: &[String]) -> Result<Vec<Option<String>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn.get().await?;
        let mut mget = redis::cmd("MGET");
        for key in keys {
            mget.arg(self.entry(key));
        }
        mget.query_async(&mut conn).await.map_err(|e| classify(&e))
    }

    /// Redis expires the entries itself.
    async fn prune(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use redis::AsyncCommands;

    use super::*;
    use crate::titles::store::redis::tests::test_store;

    #[tokio::test]
    async fn satisfies_the_memo_contract_and_each_key_expires() {
        // The title store's test helper decides (skip ledger) whether Redis is there.
        let Some(titles) = test_store(10).await else {
            return;
        };
        let url = std::env::var("HARNESS_PROXY_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let prefix = format!("hp-test-{}", uuid::Uuid::new_v4());
        let memo = Arc::new(RedisMemo::open(&url, &prefix).expect("URL parses"));
        super::super::contract::run(|| Some(memo.clone() as Arc<dyn SharedMemo>)).await;
        let mut conn = memo.conn.get().await.expect("conn");
        let ttl: i64 = conn.pttl(memo.entry("k-shared")).await.expect("pttl");
        let day = i64::try_from(super::super::SHARED_TTL.as_millis()).expect("fits");
        assert!(ttl > 0 && ttl <= day, "an entry expires: {ttl}");
        let keys: Vec<String> = conn.keys(format!("{prefix}:*")).await.expect("keys");
        assert!(keys.iter().all(|k| k.starts_with(&format!("{prefix}:rm:"))));
        let _: i64 = conn.del(keys).await.expect("del");
        crate::titles::store::redis::tests::purge(&titles).await;
    }
}
