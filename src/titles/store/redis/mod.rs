//! Redis store, shared by every replica. Layout under `titles.redis_prefix` (`P`):
//! - `P:t:{owner}:{id}`: the record, a hash, expiring `titles.retention` after its creation;
//! - `P:o:{owner}` (ids) and `P:all` (`owner␟id`): sorted sets scored by creation time in
//!   microseconds, for newest-first listing with the same cursor as the other stores;
//! - `P:id:{id}`: owners of an id, for the admin's unscoped read;
//! - `P:pending`: records still pending, for recovery; `P:leases`: each process's lease expiry.
//!
//! Writes that must be atomic (the claim, the outcome, a stale failure) are Lua scripts. The
//! connection manager reconnects by itself; when Redis cannot be reached every call fails fast
//! with `StoreError::Unavailable` (the caller decides: no title, or a queued outcome).

mod scripts;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};

use crate::store::{RedisServer, classify};
use scripts::Scripts;

use super::{Cursor, Status, StoreError, TitleRecord, TitleStore};

/// Separates owner and id in set members (owners are hashes and never contain it).
const SEP: char = '\u{1f}';

pub struct RedisStore {
    server: Arc<RedisServer>,
    prefix: String,
    retention: Duration,
    max_records: usize,
    scripts: Scripts,
}

fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

impl RedisStore {
    /// The store on the shared server, under its prefix.
    pub fn on(server: Arc<RedisServer>, retention: Duration, max_records: usize) -> Self {
        Self {
            prefix: server.prefix.clone(),
            server,
            retention,
            max_records: max_records.max(1),
            scripts: Scripts::default(),
        }
    }

    async fn conn(&self) -> Result<ConnectionManager, StoreError> {
        self.server.conn.get().await
    }

    fn key(&self, kind: &str, rest: &str) -> String {
        format!("{}:{kind}:{rest}", self.prefix)
    }

    fn record_key(&self, owner: &str, id: &str) -> String {
        self.key("t", &format!("{owner}:{id}"))
    }

    fn all_key(&self) -> String {
        format!("{}:all", self.prefix)
    }

    fn leases_key(&self) -> String {
        format!("{}:leases", self.prefix)
    }

    fn pending_key(&self) -> String {
        format!("{}:pending", self.prefix)
    }

    /// What is left of the retention for a record created at `created`, at least a second.
    fn ttl_ms(&self, created: DateTime<Utc>) -> i64 {
        let retention = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        let age = (Utc::now() - created).num_milliseconds().max(0);
        retention.saturating_sub(age).max(1000)
    }

    /// Runs CLAIM or FINISH: KEYS = record, owner index, all, pending, id index.
    async fn write(&self, script: &Script, r: &TitleRecord) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let member = format!("{}{SEP}{}", r.owner, r.id);
        let mut invocation = script.key(self.record_key(&r.owner, &r.id));
        invocation
            .key(self.key("o", &r.owner))
            .key(self.all_key())
            .key(self.pending_key())
            .key(self.key("id", &r.id))
            .arg(&member)
            .arg(micros(r.created_at))
            .arg(self.ttl_ms(r.created_at))
            .arg(&r.owner)
            .arg(&r.id);
        for (field, value) in fields(r) {
            invocation.arg(field).arg(value);
        }
        let won: i64 = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(won == 1)
    }

    /// Reads the records behind index members (`id`s of one owner, or `owner␟id`), dropping
    /// members whose record has expired.
    async fn load(
        &self,
        conn: &mut ConnectionManager,
        owner: Option<&str>,
        members: &[String],
    ) -> Result<Vec<TitleRecord>, StoreError> {
        let mut pipe = redis::pipe();
        let mut keys = Vec::with_capacity(members.len());
        for member in members {
            let (o, id) = match owner {
                Some(o) => (o, member.as_str()),
                None => member.split_once(SEP).unwrap_or(("", member.as_str())),
            };
            keys.push((o.to_owned(), id.to_owned()));
            pipe.hgetall(self.record_key(o, id));
        }
        let maps: Vec<HashMap<String, String>> =
            pipe.query_async(conn).await.map_err(|e| classify(&e))?;
        Ok(maps.iter().filter_map(parse).collect())
    }

    /// Index members scored within `[min, max]` (Redis range syntax), newest first.
    async fn range(
        conn: &mut ConnectionManager,
        index: &str,
        max: &str,
        min: &str,
        offset: usize,
        count: usize,
    ) -> Result<Vec<String>, StoreError> {
        redis::cmd("ZRANGE")
            .arg(index)
            .arg(max)
            .arg(min)
            .arg("BYSCORE")
            .arg("REV")
            .arg("LIMIT")
            .arg(offset)
            .arg(count)
            .query_async(conn)
            .await
            .map_err(|e| classify(&e))
    }

    /// Deletes records by their `owner␟id` members; returns how many left the index.
    async fn delete(
        &self,
        conn: &mut ConnectionManager,
        members: &[String],
    ) -> Result<u64, StoreError> {
        if members.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for member in members {
            let (owner, id) = member.split_once(SEP).unwrap_or(("", member.as_str()));
            pipe.del(self.record_key(owner, id))
                .ignore()
                .zrem(self.key("o", owner), id)
                .ignore()
                .zrem(self.key("id", id), owner)
                .ignore()
                .srem(self.pending_key(), member)
                .ignore();
        }
        pipe.zrem(self.all_key(), members);
        let (removed,): (u64,) = pipe.query_async(conn).await.map_err(|e| classify(&e))?;
        Ok(removed)
    }
}

fn fields(r: &TitleRecord) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("owner", r.owner.clone()),
        ("id", r.id.clone()),
        ("status", r.status.as_str().to_owned()),
        ("model", r.model.clone()),
        ("harness", r.harness.clone()),
        ("protocol", r.protocol.clone()),
        ("created_at", micros(r.created_at).to_string()),
        ("updated_at", micros(r.updated_at).to_string()),
        ("instance", r.instance.clone()),
        ("text", r.text.clone()),
    ];
    if let Some(title) = &r.title {
        out.push(("title", title.clone()));
    }
    if let Some(error) = &r.error {
        out.push(("error", error.clone()));
    }
    out
}

fn parse(map: &HashMap<String, String>) -> Option<TitleRecord> {
    let time = |field: &str| {
        map.get(field)
            .and_then(|v| v.parse::<i64>().ok())
            .and_then(|v| Utc.timestamp_micros(v).single())
    };
    Some(TitleRecord {
        owner: map.get("owner")?.clone(),
        id: map.get("id")?.clone(),
        title: map.get("title").cloned(),
        status: map
            .get("status")
            .and_then(|s| Status::parse(s))
            .unwrap_or(Status::Failed),
        error: map.get("error").cloned(),
        model: map.get("model").cloned().unwrap_or_default(),
        harness: map.get("harness").cloned().unwrap_or_default(),
        protocol: map
            .get("protocol")
            .cloned()
            .unwrap_or_else(|| "chat".to_owned()),
        created_at: time("created_at")?,
        updated_at: time("updated_at")?,
        instance: map.get("instance").cloned().unwrap_or_default(),
        text: map.get("text").cloned().unwrap_or_default(),
    })
}

fn newest_first(records: &mut [TitleRecord]) {
    records.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.id.cmp(&a.id))
    });
}

#[async_trait]
impl TitleStore for RedisStore {
    async fn claim(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        let won = self.write(&self.scripts.claim, record).await?;
        if won {
            let mut conn = self.conn().await?;
            let count: usize = conn.zcard(self.all_key()).await.map_err(|e| classify(&e))?;
            if count > self.max_records {
                let oldest: Vec<String> = conn
                    .zrange(self.all_key(), 0, (count - self.max_records - 1) as isize)
                    .await
                    .map_err(|e| classify(&e))?;
                self.delete(&mut conn, &oldest).await?;
            }
        }
        Ok(won)
    }

    async fn set_text(&self, owner: &str, id: &str, text: &str) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let _: i64 = self
            .scripts
            .set_text
            .key(self.record_key(owner, id))
            .arg(text)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(())
    }

    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        self.write(&self.scripts.finish, record).await.map(|_| ())
    }

    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError> {
        let mut conn = self.conn().await?;
        let owners: Vec<String> = match owner {
            Some(owner) => vec![owner.to_owned()],
            None => conn
                .zrevrange(self.key("id", id), 0, -1)
                .await
                .map_err(|e| classify(&e))?,
        };
        for owner in owners {
            let map: HashMap<String, String> = conn
                .hgetall(self.record_key(&owner, id))
                .await
                .map_err(|e| classify(&e))?;
            if let Some(record) = parse(&map) {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }

    async fn list(
        &self,
        owner: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        let mut conn = self.conn().await?;
        let index = owner.map_or_else(|| self.all_key(), |o| self.key("o", o));
        let mut out = Vec::new();
        let max = match before {
            Some(cursor) => {
                // Same microsecond as the cursor: only ids before it (few, read whole).
                let at = cursor.created_at_micros.to_string();
                let ties = Self::range(&mut conn, &index, &at, &at, 0, usize::MAX >> 1).await?;
                let mut tied = self.load(&mut conn, owner, &ties).await?;
                tied.retain(|r| cursor.is_before(r));
                out.extend(tied);
                format!("({at}")
            }
            None => "+inf".to_owned(),
        };
        let mut offset = 0;
        let batch = limit.clamp(1, 500);
        while out.len() < limit {
            let members = Self::range(&mut conn, &index, &max, "-inf", offset, batch).await?;
            offset += members.len();
            out.extend(self.load(&mut conn, owner, &members).await?);
            if members.len() < batch {
                break;
            }
        }
        newest_first(&mut out);
        out.truncate(limit);
        Ok(out)
    }

    async fn prune(&self, older_than: DateTime<Utc>, keep: usize) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let aged: Vec<String> = conn
            .zrangebyscore(self.all_key(), "-inf", format!("({}", micros(older_than)))
            .await
            .map_err(|e| classify(&e))?;
        let mut removed = self.delete(&mut conn, &aged).await?;
        let count: usize = conn.zcard(self.all_key()).await.map_err(|e| classify(&e))?;
        if count > keep {
            let excess: Vec<String> = conn
                .zrange(self.all_key(), 0, (count - keep - 1) as isize)
                .await
                .map_err(|e| classify(&e))?;
            removed += self.delete(&mut conn, &excess).await?;
        }
        Ok(removed)
    }

    async fn renew_lease(&self, instance: &str, until: DateTime<Utc>) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let _: i64 = conn
            .hset(self.leases_key(), instance, micros(until))
            .await
            .map_err(|e| classify(&e))?;
        Ok(())
    }

    async fn withdraw(&self, record: &TitleRecord, reason: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let member = format!("{}{SEP}{}", record.owner, record.id);
        let done: i64 = self
            .scripts
            .fail_if_pending
            .key(self.record_key(&record.owner, &record.id))
            .key(self.pending_key())
            .arg(&record.instance)
            .arg(reason)
            .arg(micros(Utc::now()))
            .arg(&member)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(done == 1)
    }

    async fn fail_stale_pending(
        &self,
        own: Option<&str>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let members: Vec<String> = conn
            .smembers(self.pending_key())
            .await
            .map_err(|e| classify(&e))?;
        let leases: HashMap<String, i64> = conn
            .hgetall(self.leases_key())
            .await
            .map_err(|e| classify(&e))?;
        let mut failed = 0;
        for member in members {
            let (owner, id) = member.split_once(SEP).unwrap_or(("", member.as_str()));
            let key = self.record_key(owner, id);
            let instance: Option<String> = conn
                .hget(&key, "instance")
                .await
                .map_err(|e| classify(&e))?;
            let instance = instance.unwrap_or_default();
            let alive = leases
                .get(&instance)
                .is_some_and(|until| *until >= micros(now));
            let stale = own == Some(instance.as_str()) || !alive;
            if !stale {
                continue;
            }
            let done: i64 = self
                .scripts
                .fail_if_pending
                .key(&key)
                .key(self.pending_key())
                .arg(&instance)
                .arg(reason)
                .arg(micros(now))
                .arg(&member)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| classify(&e))?;
            failed += u64::try_from(done).unwrap_or(0);
        }
        // Leases of processes gone for a day are of no more use.
        let day_ago = micros(now) - 24 * 3600 * 1_000_000;
        let gone: Vec<&String> = leases
            .iter()
            .filter(|(_, until)| **until < day_ago)
            .map(|(instance, _)| instance)
            .collect();
        if !gone.is_empty() {
            let _: i64 = conn
                .hdel(self.leases_key(), gone)
                .await
                .map_err(|e| classify(&e))?;
        }
        Ok(failed)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let _: () = redis::cmd("SET")
            .arg(format!("{}:probe", self.prefix))
            .arg(micros(Utc::now()))
            .arg("PX")
            .arg(60_000)
            .query_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(())
    }

    fn shared(&self) -> bool {
        true
    }
}
