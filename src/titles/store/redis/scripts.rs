//! The Lua scripts that make the Redis store's multi-key writes atomic. Every one takes
//! KEYS = record hash (and, for the writes, owner index, all, pending, id index).

use redis::Script;

pub const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5]); redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[4]); redis.call('PEXPIRE', KEYS[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return 1";

pub const FINISH: &str = r"
redis.call('HDEL', KEYS[1], 'title', 'error')
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5]); redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[5], ARGV[2], ARGV[4]); redis.call('PEXPIRE', KEYS[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return 1";

pub const SET_TEXT: &str = r"
if redis.call('HGET', KEYS[1], 'status') == 'pending' then
  redis.call('HSET', KEYS[1], 'text', ARGV[1])
end
return 1";

/// Fails one record if it is still pending and still run by the instance found stale.
pub const FAIL_IF_PENDING: &str = r"
local s = redis.call('HMGET', KEYS[1], 'status', 'instance')
if s[1] == 'pending' and s[2] == ARGV[1] then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[2], 'updated_at', ARGV[3])
  redis.call('SREM', KEYS[2], ARGV[4])
  return 1
end
if not s[1] or s[1] ~= 'pending' then redis.call('SREM', KEYS[2], ARGV[4]) end
return 0";

pub struct Scripts {
    pub claim: Script,
    pub finish: Script,
    pub set_text: Script,
    pub fail_if_pending: Script,
}

impl Default for Scripts {
    fn default() -> Self {
        Self {
            claim: Script::new(CLAIM),
            finish: Script::new(FINISH),
            set_text: Script::new(SET_TEXT),
            fail_if_pending: Script::new(FAIL_IF_PENDING),
        }
    }
}
