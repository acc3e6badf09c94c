//! The engine's server-side steps, each one Lua script, so each runs
//! atomically on the server (a script runs alone: no other client's command
//! comes between its reads and its writes). `layout.rs` describes the keys.
//!
//! Every script takes the root as `ARGV[1]`. Members are
//! `TOKEN:MODE:HOST:GEN` (mode `w` a writer, `r` a reader, `e` a candidate
//! of the election of the lock's name, which conflicts as a writer does and
//! counts as another host's contender even beside its own host's members,
//! `p` a permit of the semaphore of the name, whose count is its field in
//! the values hash: permits hold side by side, as many as the count);
//! a member is alive while its session key
//! `ROOT/%session/HOST:GEN` exists, and the scripts that read a queue drop
//! its dead members first, so a crashed host's entries go at the first look
//! after its session key expired.

use std::sync::LazyLock;

use redis::{Script, ScriptInvocation};
use wardlock_backend::name::LockName;

use crate::layout::Layout;

/// The helpers every queue script shares.
macro_rules! prelude {
    () => {
        r#"
local root = ARGV[1]
local function parse(member)
  local token, mode, host, gen = string.match(member, '^(%d+):([wrep]):([^:]+):(%d+)$')
  return mode, host, gen, token
end
local function session_of(member)
  local _, host, gen = parse(member)
  return root .. '/%session/' .. host .. ':' .. gen
end
local function values_of(queue)
  return root .. '/%value/' .. string.sub(queue, #root + 9)
end
local function live_queue(queue)
  local live = {}
  for _, m in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
    if redis.call('EXISTS', session_of(m)) == 1 then
      live[#live + 1] = m
    else
      redis.call('ZREM', queue, m)
      redis.call('HDEL', values_of(queue), m)
    end
  end
  return live
end
local function permits_of(queue, member)
  return tonumber(redis.call('HGET', values_of(queue), member)) or 1
end
local function holders(live, queue)
  if #live == 0 then return 0 end
  local head = parse(live[1])
  if head == 'w' or head == 'e' then return 1 end
  local most = #live
  if head == 'p' then most = permits_of(queue, live[1]) end
  local n = 0
  for _, m in ipairs(live) do
    if parse(m) == head and n < most then n = n + 1 else break end
  end
  return n
end
local function conflict(a, b)
  return not ((a == 'r' and b == 'r') or (a == 'p' and b == 'p'))
end
local function tell(member, what)
  local _, host = parse(member)
  redis.call('PUBLISH', root .. '/%wake/' .. host, what .. ' ' .. member)
end
local function tell_observers(observers, name)
  for _, s in ipairs(redis.call('SMEMBERS', observers)) do
    if redis.call('EXISTS', root .. '/%session/' .. s) == 1 then
      local host = string.match(s, '^([^:]+):')
      redis.call('PUBLISH', root .. '/%wake/' .. host, 'leader ' .. name)
    else
      redis.call('SREM', observers, s)
    end
  end
end
local function value_of(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return nil end
  if kind ~= 'string' then return 'a ' .. kind end
  return redis.call('GET', key)
end
local function ours(value)
  return value and string.sub(value, 1, 9) == 'wardlock:'
end
"#
    };
}

/// Queues a member for a lock. KEYS: session, token counter, queue,
/// values, observers. ARGV: root, mode (`w`/`r`/`e`/`p`), host, generation,
/// a candidate's value or a permit's count, the lock's name. Answers
/// `{'queued', token, member}`, `{'ended'}` when the session key is gone,
/// or `{'mismatch', count}` when the semaphore's permits queued already
/// use another count (nothing queued). Tells each
/// holder that it conflicts with and that is of another host, or any
/// holder for a candidate (`behind`), and the observers when the member
/// heads the queue (`leader`).
pub(crate) static ENQUEUE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'ended'} end
local live = live_queue(KEYS[3])
if ARGV[2] == 'p' then
  for _, m in ipairs(live) do
    if parse(m) == 'p' then
      local theirs = permits_of(KEYS[3], m)
      if theirs ~= tonumber(ARGV[5]) then return {'mismatch', theirs} end
    end
  end
end
local token = redis.call('INCR', KEYS[2])
local member = token .. ':' .. ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[4]
redis.call('ZADD', KEYS[3], token, member)
if ARGV[2] == 'e' or ARGV[2] == 'p' then redis.call('HSET', KEYS[4], member, ARGV[5]) end
if #live == 0 then tell_observers(KEYS[5], ARGV[6]) end
for i = 1, holders(live, KEYS[3]) do
  local mode, host = parse(live[i])
  if (host ~= ARGV[3] or ARGV[2] == 'e') and conflict(mode, ARGV[2]) then
    tell(live[i], 'behind')
  end
end
return {'queued', token, member}
"#
    ))
});

/// A member's turn, taken if it has come. KEYS: queue, lock key, session,
/// held set, settle key. ARGV: root, member, session timeout (ms).
/// Answers `{what, blocker, ms}`:
/// - `granted`: no conflicting member ahead, the server settled, the lock
///   key free of foreign holders: the lock key now says wardlock holds it;
/// - `behind`: `blocker` is the nearest conflicting member ahead, whose
///   session key lives `ms` more (the waiter looks again then, or when told);
/// - `settling`: the server changed `ms` ago less than a session timeout;
/// - `foreign`: another client (redis-py) holds the lock key, `ms` more
///   (a key of another type than a string is foreign too);
/// - `gone`: the member is not queued (its session ended);
/// - `ended`: the session key is gone.
pub(crate) static CHECK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
if redis.call('EXISTS', KEYS[3]) == 0 then return {'ended', '', 0} end
local member = ARGV[2]
local live = live_queue(KEYS[1])
local at = nil
for i, m in ipairs(live) do
  if m == member then at = i break end
end
if at == nil then return {'gone', '', 0} end
local mode = parse(member)
for i = at - 1, 1, -1 do
  if conflict(mode, parse(live[i])) then
    return {'behind', live[i], redis.call('PTTL', session_of(live[i]))}
  end
end
if mode == 'p' and at - 1 >= permits_of(KEYS[1], member) then
  -- Every permit is taken by the members ahead: look again when the
  -- soonest of their session keys would expire, or when told.
  local soonest, ms = live[1], redis.call('PTTL', session_of(live[1]))
  for i = 2, at - 1 do
    local left = redis.call('PTTL', session_of(live[i]))
    if left < ms then soonest, ms = live[i], left end
  end
  return {'behind', soonest, ms}
end
local settling = redis.call('PTTL', KEYS[5])
if settling > 0 then return {'settling', '', settling} end
local value = value_of(KEYS[2])
if value and not ours(value) then
  return {'foreign', '', redis.call('PTTL', KEYS[2])}
end
redis.call('SET', KEYS[2], 'wardlock:' .. member, 'PX', ARGV[3])
redis.call('SADD', KEYS[4], KEYS[2])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return {'granted', '', 0}
"#
    ))
});

/// Takes a member out of its queue (a release, a withdrawn wait). KEYS:
/// queue, lock key, held set, values, observers. ARGV: root,
/// member, the lock's name. Tells each member the removal lets in
/// (`grant`: one message per new holder), and the observers when a holder
/// went (`leader`); frees the lock key once no wardlock member is queued.
/// Answers 1 when the member was queued.
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
local member = ARGV[2]
local before = live_queue(KEYS[1])
local held = {}
for i = 1, holders(before, KEYS[1]) do held[before[i]] = true end
local removed = redis.call('ZREM', KEYS[1], member)
redis.call('HDEL', KEYS[4], member)
redis.call('SREM', KEYS[3], KEYS[2])
if held[member] then tell_observers(KEYS[5], ARGV[3]) end
local live = live_queue(KEYS[1])
if #live == 0 then
  if ours(value_of(KEYS[2])) then redis.call('DEL', KEYS[2]) end
  return removed
end
for i = 1, holders(live, KEYS[1]) do
  if not held[live[i]] then tell(live[i], 'grant') end
end
return removed
"#
    ))
});

/// [`RELEASE`] of `member` of `name`'s queue, whose session's held set is
/// `held`: the one way every caller builds it, so none misses a key.
pub(crate) fn release(
    layout: &Layout,
    name: &LockName,
    held: &str,
    member: &str,
) -> ScriptInvocation<'static> {
    let mut invocation = RELEASE.prepare_invoke();
    invocation
        .key(layout.queue_key(name))
        .key(layout.lock_key(name))
        .key(held)
        .key(layout.values_key(name))
        .key(layout.observers_key(name))
        .arg(layout.root())
        .arg(member)
        .arg(name.as_str());
    invocation
}

/// Whether a member of another host (or a candidate of any host) that
/// conflicts with `member` queued behind it. KEYS: queue. ARGV: root,
/// member. Answers 1 or 0.
pub(crate) static CONTENDED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
local member = ARGV[2]
local mode, host = parse(member)
local seen = false
for _, m in ipairs(live_queue(KEYS[1])) do
  if seen then
    local theirs, their_host = parse(m)
    if (their_host ~= host or theirs == 'e') and conflict(mode, theirs) then return 1 end
  elseif m == member then
    seen = true
  end
end
return 0
"#
    ))
});

/// The live members of a queue, in order. KEYS: queue. ARGV: root.
pub(crate) static MEMBERS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
return live_queue(KEYS[1])
"#
    ))
});

/// Who leads the election of a lock's name: the head of its live queue,
/// its value (a candidate's; empty for a lock's member) and how long its
/// session key lives. KEYS: queue, values, observers. ARGV:
/// root, the observing session (`HOST:GEN`, or empty), how long its
/// observation lasts unless renewed (ms). The observer is registered before
/// the queue is read, so a change after this answer is told (`leader`).
/// Answers `{}` when nobody queues, else `{member, value, ms}`.
pub(crate) static LEADER: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
if ARGV[2] ~= '' then
  redis.call('SADD', KEYS[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
local live = live_queue(KEYS[1])
if #live == 0 then return {} end
local head = live[1]
local value = redis.call('HGET', KEYS[2], head) or ''
return {head, value, redis.call('PTTL', session_of(head))}
"#
    ))
});

/// A leader's new value, set only while `member` leads: its session key
/// exists and it heads the live queue. KEYS: queue, values, observers.
/// ARGV: root, member, value, the lock's name. Tells the observers
/// (`leader`). Answers 1, or 0 when the member does not lead.
pub(crate) static PROCLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
local member = ARGV[2]
if redis.call('EXISTS', session_of(member)) == 0 then return 0 end
if live_queue(KEYS[1])[1] ~= member then return 0 end
redis.call('HSET', KEYS[2], member, ARGV[3])
tell_observers(KEYS[3], ARGV[4])
return 1
"#
    ))
});

/// Renews a session and the lock keys it holds. KEYS: session, held set.
/// ARGV: root, session timeout (ms). Answers 0 when the session key is
/// gone (the server ended the session), 1 otherwise.
pub(crate) static HEARTBEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return 0 end
for _, lock in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if ours(value_of(lock)) then redis.call('PEXPIRE', lock, ARGV[2]) end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"#
    ))
});

/// A guarded write (`put` or `del`), committed only while `member` holds:
/// its session key exists and it is the head of its lock's live queue (an
/// exclusive member holds exactly then). KEYS: queue, data hash, revision
/// counter. ARGV: root, member, field, op, value. Answers -1 when the member
/// does not hold (nothing written); else the put's revision, or 1/0 for a
/// delete that found an entry or none.
pub(crate) static GUARDED_WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
local member = ARGV[2]
if redis.call('EXISTS', session_of(member)) == 0 then return -1 end
local live = live_queue(KEYS[1])
if live[1] ~= member then return -1 end
if ARGV[4] == 'del' then return redis.call('HDEL', KEYS[2], ARGV[3]) end
local revision = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[2], ARGV[3], revision .. '|' .. ARGV[5])
return revision
"#
    ))
});

/// A batch of `wasi:keyvalue` writes, whole or not at all: it commits only
/// if every fence member holds (alive, heading its queue) and every write's
/// expectation holds. KEYS: bucket hash, version counter. ARGV: root, the
/// fence's count, then per fence member its queue and the member, the
/// writes' count, then per write `op` (`put`/`del`), key, expectation
/// (`any`/`absent`/`version`), expected version, value. Answers
/// `{'committed'}`, `{'lost'}` or `{'conflict', key}`.
pub(crate) static KV_WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        prelude!(),
        r#"
local i = 2
local fences = tonumber(ARGV[i])
i = i + 1
for _ = 1, fences do
  local queue, member = ARGV[i], ARGV[i + 1]
  i = i + 2
  if redis.call('EXISTS', session_of(member)) == 0 then return {'lost'} end
  if live_queue(queue)[1] ~= member then return {'lost'} end
end
local writes = tonumber(ARGV[i])
i = i + 1
local first = i
for _ = 1, writes do
  local key, expect, version = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local stored = redis.call('HGET', KEYS[1], key)
  if expect == 'absent' and stored then return {'conflict', key} end
  if expect == 'version' then
    if not stored or string.match(stored, '^(%d+)|') ~= version then
      return {'conflict', key}
    end
  end
  i = i + 5
end
i = first
for _ = 1, writes do
  local op, key, value = ARGV[i], ARGV[i + 1], ARGV[i + 4]
  if op == 'del' then
    redis.call('HDEL', KEYS[1], key)
  else
    redis.call('HSET', KEYS[1], key, redis.call('INCR', KEYS[2]) .. '|' .. value)
  end
  i = i + 5
end
return {'committed'}
"#
    ))
});

/// Notes the server a root is served by. KEYS: server key, settle key,
/// token counter, revision counter, key-value version counter. ARGV: root,
/// run id, session timeout (ms), jump, `1` when the primary was found
/// through Sentinel, the run id this host connected to last (or empty), the
/// highest token this host has seen.
///
/// When the root was last served by another server (a restart, a
/// failover), every session of the old one is over: no grant for a
/// session timeout (the settle key), and each counter moves past whatever
/// the new server may have lost: to at least its old value plus the jump,
/// the server's clock in milliseconds × 16 (a floor no earlier move can
/// have passed at fewer than 16 grants a millisecond), and, for tokens, the
/// highest this host saw plus the jump. A root the server has no record of
/// counts as moved too when it may be a promoted replica that never
/// received the root (Sentinel), or when this host was on another server
/// before: only a root new to every host starts from nothing. Answers 1
/// when moved, else 0.
pub(crate) static IDENTIFY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local seen = redis.call('GET', KEYS[1])
if seen == ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if not seen and ARGV[5] ~= '1' and (ARGV[6] == '' or ARGV[6] == ARGV[2]) then return 0 end
redis.call('SET', KEYS[2], seen or 'unrecorded', 'PX', ARGV[3])
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 16000 + math.floor(tonumber(now[2]) / 62.5)
local jump = tonumber(ARGV[4])
for i = 3, 5 do
  local value = tonumber(redis.call('GET', KEYS[i]) or '0') + jump
  if i == 3 then value = math.max(value, tonumber(ARGV[7]) + jump) end
  redis.call('SET', KEYS[i], string.format('%d', math.max(value, floor)))
end
return 1
"#,
    )
});
