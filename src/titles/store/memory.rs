//! In-memory store, bounded: beyond `max_records` the oldest records are evicted. One process
//! only, so its claim needs nothing more than the map's lock.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Cursor, Status, StoreError, TitleRecord, TitleStore};

/// Records by (owner, id).
type Records = HashMap<(String, String), TitleRecord>;

#[derive(Default)]
struct Inner {
    records: Records,
    /// Lease expiry by instance id.
    leases: HashMap<String, DateTime<Utc>>,
}

pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_records: usize,
}

impl MemoryStore {
    pub fn new(max_records: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            max_records: max_records.max(1),
        }
    }

    /// The records, even after a panic while they were held: every change made under the lock
    /// leaves the maps whole (a record at worst half updated), so a panic elsewhere must not
    /// fail every later call of the process, as a poisoned lock did.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn newest_first(records: &mut [TitleRecord]) {
    records.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.id.cmp(&a.id))
    });
}

fn evict_oldest(map: &mut Records, keep: usize) -> u64 {
    if map.len() <= keep {
        return 0;
    }
    let mut all: Vec<TitleRecord> = map.values().cloned().collect();
    newest_first(&mut all);
    let mut removed = 0;
    for record in &all[keep..] {
        map.remove(&(record.owner.clone(), record.id.clone()));
        removed += 1;
    }
    removed
}

#[async_trait]
impl TitleStore for MemoryStore {
    async fn claim(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let key = (record.owner.clone(), record.id.clone());
        if inner.records.contains_key(&key) {
            return Ok(false);
        }
        inner.records.insert(key, record.clone());
        evict_oldest(&mut inner.records, self.max_records);
        Ok(true)
    }

    async fn set_text(&self, owner: &str, id: &str, text: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(r) = inner.records.get_mut(&(owner.to_owned(), id.to_owned()))
            && r.status == Status::Pending
        {
            text.clone_into(&mut r.text);
        }
        Ok(())
    }

    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let key = (record.owner.clone(), record.id.clone());
        match inner.records.get_mut(&key) {
            Some(existing) => {
                existing.status = record.status;
                existing.title.clone_from(&record.title);
                existing.error.clone_from(&record.error);
                existing.text.clone_from(&record.text);
                existing.updated_at = record.updated_at;
            }
            None => {
                inner.records.insert(key, record.clone());
                evict_oldest(&mut inner.records, self.max_records);
            }
        }
        Ok(())
    }

    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError> {
        let inner = self.lock();
        let map = &inner.records;
        Ok(match owner {
            Some(owner) => map.get(&(owner.to_owned(), id.to_owned())).cloned(),
            None => map
                .values()
                .filter(|r| r.id == id)
                .max_by_key(|r| r.created_at)
                .cloned(),
        })
    }

    async fn list(
        &self,
        owner: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        let inner = self.lock();
        let mut records: Vec<TitleRecord> = inner
            .records
            .values()
            .filter(|r| owner.is_none_or(|o| r.owner == o))
            .filter(|r| before.is_none_or(|c| c.is_before(r)))
            .cloned()
            .collect();
        newest_first(&mut records);
        records.truncate(limit);
        Ok(records)
    }

    async fn prune(&self, older_than: DateTime<Utc>, keep: usize) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let map = &mut inner.records;
        let before = map.len();
        map.retain(|_, r| r.created_at >= older_than);
        let aged = (before - map.len()) as u64;
        Ok(aged + evict_oldest(map, keep))
    }

    async fn renew_lease(&self, instance: &str, until: DateTime<Utc>) -> Result<(), StoreError> {
        self.lock().leases.insert(instance.to_owned(), until);
        Ok(())
    }

    async fn fail_stale_pending(
        &self,
        own: Option<&str>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let Inner { records, leases } = &mut *inner;
        let mut count = 0;
        for record in records.values_mut().filter(|r| r.status == Status::Pending) {
            let expired = leases
                .get(&record.instance)
                .is_none_or(|until| *until < now);
            if expired || own == Some(record.instance.as_str()) {
                record.status = Status::Failed;
                record.error = Some(reason.to_owned());
                record.updated_at = now;
                count += 1;
            }
        }
        Ok(count)
    }

    async fn withdraw(&self, record: &TitleRecord, reason: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let key = (record.owner.clone(), record.id.clone());
        let Some(stored) = inner.records.get_mut(&key) else {
            return Ok(false);
        };
        if stored.status != Status::Pending || stored.instance != record.instance {
            return Ok(false);
        }
        stored.status = Status::Failed;
        stored.error = Some(reason.to_owned());
        stored.updated_at = Utc::now();
        Ok(true)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        drop(self.lock());
        Ok(())
    }

    fn shared(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn satisfies_the_store_contract() {
        super::super::contract::run(std::sync::Arc::new(MemoryStore::new(100))).await;
    }

    #[tokio::test]
    async fn a_panic_while_the_records_were_held_does_not_end_the_store() {
        let store = MemoryStore::new(10);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = store.inner.lock().expect("not poisoned yet");
            panic!("a panic while the records are held");
        }));
        assert!(panicked.is_err() && store.inner.is_poisoned());

        let record = super::super::contract::record("o", "a", 0);
        assert_eq!(store.claim(&record).await.ok(), Some(true), "claimed");
        assert_eq!(
            store.get(Some("o"), "a").await.ok().flatten().map(|r| r.id),
            Some("a".to_owned()),
            "and read back"
        );
        store.ping().await.expect("the store answers");
    }

    #[tokio::test]
    async fn is_bounded() {
        let store = MemoryStore::new(2);
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            store
                .claim(&super::super::contract::record("o", id, i as i64))
                .await
                .expect("insert");
        }
        let ids: Vec<String> = store
            .list(None, None, 10)
            .await
            .expect("list")
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["c", "b"]);
    }
}
