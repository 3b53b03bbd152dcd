//! The memo's keys in the shared Redis (`store`), under `P:rm:` (`P` = `titles.redis_prefix`):
//! - `P:rm:a:{n}`: one answer, a hash of its reasoning (`t`; the server's signature `s` and its
//!   redacted thinking `x`, a JSON array, each only when the answer had one), the time it is
//!   forgotten (`e`, ms) and its calls' references (`c`, 16 bytes each), kept `SLACK` past that
//!   time;
//! - `P:rm:r:{owner}`: a caller's calls, a hash of reference → `n` of the answer it refers to
//!   (a reference is the first 16 bytes of the call's key: a field per call costs about 70
//!   bytes, a key with its own TTL over 200);
//! - `P:rm:all` and `P:rm:o:{owner}`: every answer and each caller's, sorted sets scored by
//!   write time, members `n:bytes:rows[:owner]` (what dropping one takes off the sums);
//!   `P:rm:sum`: the bytes and rows of all (`bytes`, `rows`) and of each caller (`{owner}:b`,
//!   `{owner}:r`); `P:rm:n`: the answer counter. Each write renews their `PX`.
//!
//! A write is one Lua script, so the bounds hold at every write whichever replica makes it: it
//! drops answers whose time is up, stores the answer once and its calls' references, then drops
//! the caller's oldest past its bound and everyone's oldest past the total, each answer with the
//! references still pointing at it. A read finds nothing past an answer's time, whether or not
//! a write has dropped it yet. Redis forgets every key after its `PX` (and under `maxmemory`
//! with a volatile policy, before): the scripts take a missing key as gone. Its own lazily made
//! connection, failing fast while Redis is down. The scripts name keys they compute (a Redis
//! Cluster would need them in one slot; the title store is one Redis).
//!
//! The keys before issue 30 (`P:rm:{key}`, the reasoning once per call id) are not read: they
//! expire by their own `PX`, within a day.
//!
//! Owns: the `P:rm:` keys. Must not: touch the title records' keys.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use redis::Script;

use super::shared::{Entry, SharedMemo};
use super::{Bounds, Evicted, Thought, Usage};
use crate::store::{RedisServer, StoreError, classify};

/// How long an answer's hash outlives its time, so that the next write or the hourly prune
/// still finds the references it must take along (a caller's hash of references expires a TTL
/// after its last write in any case).
const SLACK: Duration = Duration::from_secs(2 * 3600);
/// The bytes of a call's key that make its reference.
const REF_LEN: usize = 16;

/// Shared by the scripts: dropping one answer and the references still pointing at it, and
/// dropping those whose time is up. ARGV[1] is the prefix (`P:rm:`), ARGV[2] the time now
/// (ms), ARGV[3] the TTL (ms).
const COMMON: &str = r"
local p = ARGV[1]
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local all, sum = p .. 'all', p .. 'sum'
local function drop(member)
  local id, b, r, o = string.match(member, '^(%d+):(%d+):(%d+):(.*)$')
  local a, refs = p .. 'a:' .. id, p .. 'r:' .. o
  local calls = redis.call('HGET', a, 'c')
  if calls then
    for i = 1, #calls, 16 do
      local ref = string.sub(calls, i, i + 15)
      if redis.call('HGET', refs, ref) == id then redis.call('HDEL', refs, ref) end
    end
  end
  redis.call('DEL', a)
  redis.call('ZREM', all, member)
  redis.call('ZREM', p .. 'o:' .. o, id .. ':' .. b .. ':' .. r)
  redis.call('HINCRBY', sum, 'bytes', -tonumber(b))
  redis.call('HINCRBY', sum, 'rows', -tonumber(r))
  if redis.call('HINCRBY', sum, o .. ':r', -tonumber(r)) <= 0 then
    redis.call('HDEL', sum, o .. ':r', o .. ':b')
  else
    redis.call('HINCRBY', sum, o .. ':b', -tonumber(b))
  end
end
local function expire()
  local gone = redis.call('ZRANGEBYSCORE', all, '-inf', now - ttl)
  for _, member in ipairs(gone) do drop(member) end
  return #gone
end
local function used(field)
  return tonumber(redis.call('HGET', sum, field) or '0')
end
";

/// ARGV after the common three: owner, text, the calls' references (16 bytes each), bytes,
/// rows, the caller's bytes and rows bounds, the total's, the slack (ms), the signature and the
/// redacted thinking (empty when none: not stored). Returns {evicted past the caller's bound,
/// past the total}.
const PUT: &str = r"
local owner, text, calls = ARGV[4], ARGV[5], ARGV[6]
local bytes, rows = tonumber(ARGV[7]), tonumber(ARGV[8])
local own_b, own_r, all_b, all_r = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local slack = tonumber(ARGV[13])
local signature, redacted = ARGV[14], ARGV[15]
expire()
local id = tostring(redis.call('INCR', p .. 'n'))
local a, refs, own = p .. 'a:' .. id, p .. 'r:' .. owner, p .. 'o:' .. owner
redis.call('HSET', a, 't', text, 'c', calls, 'e', now + ttl)
if signature ~= '' then redis.call('HSET', a, 's', signature) end
if redacted ~= '' then redis.call('HSET', a, 'x', redacted) end
redis.call('PEXPIRE', a, ttl + slack)
for i = 1, #calls, 16 do
  redis.call('HSET', refs, string.sub(calls, i, i + 15), id)
end
redis.call('ZADD', all, now, id .. ':' .. bytes .. ':' .. rows .. ':' .. owner)
redis.call('ZADD', own, now, id .. ':' .. bytes .. ':' .. rows)
redis.call('HINCRBY', sum, 'bytes', bytes)
redis.call('HINCRBY', sum, 'rows', rows)
redis.call('HINCRBY', sum, owner .. ':b', bytes)
redis.call('HINCRBY', sum, owner .. ':r', rows)
local caller, total = 0, 0
while used(owner .. ':b') > own_b or used(owner .. ':r') > own_r do
  local oldest = redis.call('ZRANGE', own, 0, 0)[1]
  if not oldest then break end
  drop(oldest .. ':' .. owner)
  caller = caller + 1
end
while used('bytes') > all_b or used('rows') > all_r do
  local oldest = redis.call('ZRANGE', all, 0, 0)[1]
  if not oldest then break end
  drop(oldest)
  total = total + 1
end
for _, key in ipairs({all, sum, own, refs, p .. 'n'}) do redis.call('PEXPIRE', key, ttl + slack) end
return {caller, total}
";

/// ARGV after the common three: the owner, then the calls' references. Returns each one's
/// {text, signature, redacted} (the last two nil when not stored), or nil, in order.
const GET: &str = r"
local refs = p .. 'r:' .. ARGV[4]
local out = {}
for i = 5, #ARGV do
  local id = redis.call('HGET', refs, ARGV[i])
  local found = false
  if id then
    local a = redis.call('HMGET', p .. 'a:' .. id, 't', 'e', 's', 'x')
    if a[1] and tonumber(a[2]) > now then found = {a[1], a[3], a[4]} end
  end
  out[i - 4] = found
end
return out
";

/// Drops the answers whose time is up; how many.
const PRUNE: &str = "return expire()";

/// A call's reference: the first `REF_LEN` bytes of its key (hex), else of its text.
fn reference(key: &str) -> Vec<u8> {
    let mut bytes = hex::decode(key).unwrap_or_else(|_| key.as_bytes().to_vec());
    bytes.resize(REF_LEN, 0);
    bytes
}

pub struct RedisMemo {
    server: Arc<RedisServer>,
    /// `P:rm:`.
    prefix: String,
    bounds: Bounds,
    put: Script,
    get: Script,
    prune: Script,
}

impl RedisMemo {
    /// The memo on the shared server, under `P:rm:`.
    pub fn on(server: Arc<RedisServer>, bounds: Bounds) -> Self {
        Self {
            prefix: format!("{}:rm:", server.prefix),
            server,
            bounds,
            put: Script::new(&format!("{COMMON}{PUT}")),
            get: Script::new(&format!("{COMMON}{GET}")),
            prune: Script::new(&format!("{COMMON}{PRUNE}")),
        }
    }

    /// A script invocation with the common arguments, the time now from this process's clock.
    fn invoke<'a>(&self, script: &'a Script, ttl: Duration) -> redis::ScriptInvocation<'a> {
        self.invoke_at(script, Utc::now().timestamp_millis(), ttl)
    }

    fn invoke_at<'a>(
        &self,
        script: &'a Script,
        now_ms: i64,
        ttl: Duration,
    ) -> redis::ScriptInvocation<'a> {
        let mut invocation = script.prepare_invoke();
        invocation
            .arg(&self.prefix)
            .arg(now_ms)
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
        invocation
    }

    /// Drops the answers whose time is up by `now_ms`; how many.
    async fn prune_at(&self, now_ms: i64) -> Result<u64, StoreError> {
        let mut conn = self.server.conn.get().await?;
        self.invoke_at(&self.prune, now_ms, super::SHARED_TTL)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))
    }
}

#[async_trait]
impl SharedMemo for RedisMemo {
    async fn put(&self, entry: Entry<'_>, ttl: Duration) -> Result<Evicted, StoreError> {
        let size = Usage::of_answer(entry.thought.bytes(), entry.calls.len());
        if entry.calls.is_empty() || !size.within(self.bounds.caller) {
            return Ok(Evicted::default());
        }
        let refs: Vec<u8> = entry.calls.iter().flat_map(|k| reference(k)).collect();
        let mut conn = self.server.conn.get().await?;
        let mut invocation = self.invoke(&self.put, ttl);
        invocation
            .arg(entry.owner)
            .arg(&entry.thought.text)
            .arg(refs)
            .arg(size.bytes)
            .arg(size.rows)
            .arg(self.bounds.caller.bytes)
            .arg(self.bounds.caller.rows)
            .arg(self.bounds.total.bytes)
            .arg(self.bounds.total.rows)
            .arg(u64::try_from(SLACK.as_millis()).unwrap_or(u64::MAX))
            .arg(entry.thought.signature.as_deref().unwrap_or(""))
            .arg(entry.thought.stored_redacted().unwrap_or_default());
        let (caller, total): (u64, u64) = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(Evicted { caller, total })
    }

    async fn get(&self, owner: &str, keys: &[String]) -> Result<Vec<Option<Thought>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.server.conn.get().await?;
        let mut invocation = self.invoke(&self.get, super::SHARED_TTL);
        invocation.arg(owner);
        for key in keys {
            invocation.arg(reference(key));
        }
        type Stored = (String, Option<String>, Option<String>);
        let found: Vec<Option<Stored>> = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(|e| classify(&e))?;
        Ok(found
            .into_iter()
            .map(|f| f.map(|(t, s, x)| Thought::from_stored(t, s, x.as_deref())))
            .collect())
    }

    /// Redis expires the keys itself; this takes the expired answers off the sums.
    async fn prune(&self) -> Result<u64, StoreError> {
        self.prune_at(Utc::now().timestamp_millis()).await
    }
}

#[cfg(test)]
impl RedisMemo {
    /// What Redis says the memo's keys take (`MEMORY USAGE`, every key under `P:rm:`).
    async fn used_bytes(&self) -> u64 {
        use redis::AsyncCommands;
        let mut conn = self.server.conn.get().await.expect("conn");
        let keys: Vec<String> = conn.keys(format!("{}*", self.prefix)).await.expect("keys");
        let mut total = 0;
        for key in keys {
            let used: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut conn)
                .await
                .expect("memory usage");
            total += used.unwrap_or(0);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use redis::AsyncCommands;

    use super::*;
    use crate::memory::reasoning_memo::{SHARED_TTL, STORE_BOUNDS, contract};
    use crate::store::redis_tests::{purge, test_server};

    #[tokio::test]
    async fn satisfies_the_memo_contract_and_each_key_expires() {
        let Some(server) = test_server().await else {
            return;
        };
        let prefix = server.prefix.clone();
        let memo = Arc::new(RedisMemo::on(server.clone(), STORE_BOUNDS));
        let measured = memo.clone();
        let footprint: contract::Footprint = Box::new(move || {
            let memo = measured.clone();
            Box::pin(async move { memo.used_bytes().await })
        });
        contract::run(
            |bounds| {
                let memo = RedisMemo::on(server.clone(), bounds);
                Some(Arc::new(memo) as Arc<dyn SharedMemo>)
            },
            Some(footprint),
        )
        .await;
        let mut conn = memo.server.conn.get().await.expect("conn");
        let keys: Vec<String> = conn.keys(format!("{prefix}:*")).await.expect("keys");
        assert!(keys.iter().all(|k| k.starts_with(&format!("{prefix}:rm:"))));
        let most = i64::try_from((SHARED_TTL + SLACK).as_millis()).expect("fits");
        for key in &keys {
            let ttl: i64 = conn.pttl(key).await.expect("pttl");
            assert!(ttl > 0 && ttl <= most, "{key} expires: {ttl}");
        }
        let _: i64 = conn.del(keys).await.expect("del");
        purge(&server).await;
    }

    /// Answers whose time is up are dropped with their references, and taken off the sums, at
    /// the next write or prune, even while Redis still holds their keys.
    #[tokio::test]
    async fn expired_answers_leave_the_sums() {
        let Some(server) = test_server().await else {
            return;
        };
        let prefix = server.prefix.clone();
        let memo = RedisMemo::on(server.clone(), STORE_BOUNDS);
        let calls = [super::super::key("o", "c1"), super::super::key("o", "c2")];
        let thought = Thought::from("why");
        let entry = Entry {
            owner: "o",
            calls: &calls,
            thought: &thought,
        };
        memo.put(entry, SHARED_TTL).await.expect("put");
        let mut conn = memo.server.conn.get().await.expect("conn");
        let sum = format!("{prefix}:rm:sum");
        let now = Utc::now().timestamp_millis();
        assert_eq!(memo.prune_at(now).await.expect("prune"), 0, "not yet");
        let later = now + i64::try_from(SHARED_TTL.as_millis()).expect("fits") + 1;
        assert_eq!(
            memo.prune_at(later).await.expect("prune"),
            1,
            "its time is up"
        );
        let left: std::collections::HashMap<String, i64> = conn.hgetall(&sum).await.expect("sum");
        assert!(
            left.values().all(|v| *v == 0),
            "nothing counted any more: {left:?}"
        );
        let keys: Vec<String> = conn
            .keys(format!("{prefix}:rm:[ar]:*"))
            .await
            .expect("keys");
        assert!(
            keys.is_empty(),
            "the answer and its references went: {keys:?}"
        );
        let rest: Vec<String> = conn.keys(format!("{prefix}:*")).await.expect("keys");
        if !rest.is_empty() {
            let _: i64 = conn.del(rest).await.expect("del");
        }
        purge(&server).await;
    }
}
