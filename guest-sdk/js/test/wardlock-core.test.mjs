// Unit tests of the JavaScript SDK's shared core, in Node (`node --test
// guest-sdk/js/test/`), over stand-ins for the WIT's raw resources: what a
// guest sees of scoped release, argument forms and bad timeouts. Run by
// `tests/e2e/languages.rs` (`js_sdk_core_unit_tests_pass`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Guard, Kind, LockError, bytesOf, lockApi, millis, runScoped } from '../wardlock-core.js';

/** A stand-in for a raw `lock` resource: counts releases and drops. */
function rawLock(name, { lost = false } = {}) {
  const calls = { release: 0, drop: 0 };
  return {
    calls,
    name: () => name,
    mode: () => 'exclusive',
    status: () => (lost ? 'lost' : 'held'),
    fencingToken: () => 7n,
    release() {
      calls.release += 1;
      if (lost) throw { payload: { tag: 'lost' } };
    },
    [Symbol.dispose]() {
      calls.drop += 1;
    },
  };
}

function api(raw) {
  const acquired = [];
  const rawAcquire = (name, options) => {
    acquired.push(options);
    return raw ?? rawLock(name);
  };
  return { ...lockApi(rawAcquire, () => undefined, Guard), acquired };
}

test('a block that releases early is not released again', () => {
  const raw = rawLock('a');
  const { withLock } = api(raw);
  const result = withLock('a', {}, (lock) => {
    lock.release();
    return 'done';
  });
  assert.equal(result, 'done');
  assert.equal(raw.calls.release, 1);
});

test('an async block that releases early is not released again', async () => {
  const raw = rawLock('a');
  const { withLock } = api(raw);
  const result = await withLock('a', async (lock) => {
    lock.release();
    return 'done';
  });
  assert.equal(result, 'done');
  assert.equal(raw.calls.release, 1);
});

test('withLock(name, fn) takes the default options', () => {
  const { withLock, acquired } = api();
  assert.equal(
    withLock('a', (lock) => lock.name),
    'a',
  );
  assert.deepEqual(acquired, [{ mode: 'exclusive', timeoutMs: undefined }]);
  assert.throws(() => withLock('a', {}), TypeError);
});

test('a lock lost during the block is reported when it ends', () => {
  const raw = rawLock('a', { lost: true });
  const { withLock } = api(raw);
  assert.throws(
    () => withLock('a', () => 'work'),
    (e) => e instanceof LockError && e.kind === 'lost',
  );
});

test('a throwing block drops the lock quietly and its error goes on', () => {
  const raw = rawLock('a');
  assert.throws(
    () =>
      runScoped(new Guard(raw), () => {
        throw new Error('boom');
      }),
    /boom/,
  );
  assert.equal(raw.calls.release, 0);
  assert.equal(raw.calls.drop, 1);
});

test('timeouts are checked and rounded up', () => {
  assert.equal(millis(undefined), undefined);
  assert.equal(millis(1.2), 2n);
  assert.equal(millis(0), 0n);
  assert.equal(millis(5n), 5n);
  for (const bad of [-1, Number.NaN, Infinity, '100', null, -1n]) {
    assert.throws(() => millis(bad), RangeError, String(bad));
  }
});

test('the block gets a signal that aborts once the lock is not safely held', () => {
  let status = 'held';
  const raw = { ...rawLock('a'), status: () => status };
  const { withLock } = api(raw);
  const seen = withLock('a', (lock, signal) => {
    const before = [signal.aborted, signal.reason];
    lock.check();
    status = 'suspended';
    const suspended = [signal.aborted, signal.reason.kind];
    status = 'lost';
    assert.throws(() => signal.throwIfAborted(), (e) => e instanceof LockError && e.kind === Kind.LOST);
    assert.throws(() => lock.check(), (e) => e.kind === 'lost');
    status = 'held';
    return { before, suspended };
  });
  assert.deepEqual(seen, { before: [false, undefined], suspended: [true, Kind.UNAVAILABLE] });
});

test('a guard goes through JSON.stringify, its token as a string', () => {
  const { acquire } = api(rawLock('a'));
  const guard = acquire('a');
  assert.deepEqual(JSON.parse(JSON.stringify(guard)), {
    name: 'a',
    status: 'held',
    fencingToken: '7',
    mode: 'exclusive',
  });
  guard.release();
  assert.deepEqual(JSON.parse(JSON.stringify(guard)), { name: 'a', status: 'released', mode: 'exclusive' });
});

test('ifAvailable takes a free lock and calls back with null on a busy one', () => {
  let busy = false;
  const raw = rawLock('a');
  const { withLock, acquire } = lockApi(
    () => assert.fail('ifAvailable never waits'),
    () => (busy ? undefined : raw),
    Guard,
  );
  assert.equal(
    withLock('a', { ifAvailable: true }, (lock) => lock.fencingToken),
    7n,
  );
  assert.equal(raw.calls.release, 1, 'a granted lock is released when the block ends');
  busy = true;
  assert.equal(withLock('a', { ifAvailable: true }, (lock) => lock), null);
  assert.equal(acquire('a', { ifAvailable: true }), undefined);
  assert.throws(() => acquire('a', { ifAvailable: true, timeoutMs: 5 }), TypeError);
  assert.throws(() => acquire('a', { ifAvailable: true, signal: { aborted: false } }), TypeError);
});

test('an aborted signal throws its reason before anything is queued', () => {
  const { withLock, acquire, acquired } = api();
  const reason = new Error('gave up');
  assert.throws(() => acquire('a', { signal: { aborted: true, reason } }), (e) => e === reason);
  assert.throws(
    () => withLock('a', { signal: { aborted: true } }, () => assert.fail('never runs')),
    (e) => e.name === 'AbortError',
  );
  assert.equal(acquired.length, 0, 'nothing asked of the host');
  assert.equal(acquire('a', { signal: { aborted: false } }).name, 'a', 'a live signal waits as usual');
});

test('a guarded value is a Uint8Array as it is or a string as UTF-8', () => {
  const bytes = new Uint8Array([0, 255]);
  assert.equal(bytesOf(bytes), bytes);
  assert.deepEqual(bytesOf('é1'), new Uint8Array([0xc3, 0xa9, 0x31]));
  assert.deepEqual(bytesOf(''), new Uint8Array());
  for (const bad of [undefined, null, 7, 7n, [1, 2], new ArrayBuffer(2)]) {
    assert.throws(() => bytesOf(bad), TypeError, String(bad));
  }
});
