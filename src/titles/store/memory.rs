//! In-memory store, bounded: beyond `max_records` the oldest records are evicted.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Cursor, Status, StoreError, TitleRecord, TitleStore};

/// Records by (owner, id).
type Records = HashMap<(String, String), TitleRecord>;

pub struct MemoryStore {
    records: Mutex<Records>,
    max_records: usize,
}

impl MemoryStore {
    pub fn new(max_records: usize) -> Self {
        Self {
            records: Mutex::new(HashMap::new()),
            max_records: max_records.max(1),
        }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Records>, StoreError> {
        self.records
            .lock()
            .map_err(|_| StoreError::Backend("memory store lock poisoned".into()))
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
    async fn insert_pending(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        let mut map = self.lock()?;
        let key = (record.owner.clone(), record.id.clone());
        if map.contains_key(&key) {
            return Ok(false);
        }
        map.insert(key, record.clone());
        evict_oldest(&mut map, self.max_records);
        Ok(true)
    }

    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        let mut map = self.lock()?;
        if let Some(existing) = map.get_mut(&(record.owner.clone(), record.id.clone())) {
            existing.status = record.status;
            existing.title.clone_from(&record.title);
            existing.error.clone_from(&record.error);
            existing.updated_at = record.updated_at;
        }
        Ok(())
    }

    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError> {
        let map = self.lock()?;
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
        let map = self.lock()?;
        let mut records: Vec<TitleRecord> = map
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
        let mut map = self.lock()?;
        let before = map.len();
        map.retain(|_, r| r.created_at >= older_than);
        let aged = (before - map.len()) as u64;
        Ok(aged + evict_oldest(&mut map, keep))
    }

    async fn fail_stale_pending(
        &self,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut map = self.lock()?;
        let mut count = 0;
        for record in map.values_mut().filter(|r| r.status == Status::Pending) {
            record.status = Status::Failed;
            record.error = Some(reason.to_owned());
            record.updated_at = now;
            count += 1;
        }
        Ok(count)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.lock().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn satisfies_the_store_contract() {
        super::super::contract::run(&MemoryStore::new(100)).await;
    }

    #[tokio::test]
    async fn is_bounded() {
        let store = MemoryStore::new(2);
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            store
                .insert_pending(&super::super::contract::record("o", id, i as i64))
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
