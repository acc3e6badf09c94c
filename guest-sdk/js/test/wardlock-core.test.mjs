// Unit tests of the JavaScript SDK's shared core, in Node (`node --test
// guest-sdk/js/test/`), over stand-ins for the WIT's raw resources: what a
// guest sees of scoped release, argument forms and bad timeouts. Run by
// `tests/e2e/languages.rs` (`js_sdk_core_unit_tests_pass`).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Guard,
  Kind,
  LockError,
  bytesOf,
  lockApi,
  millis,
  runScoped,
  waitInSlices,
} from '../wardlock-core.js';

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

/** A blocking call on a fake clock: each attempt takes its whole slice and
 * times out, until `grantAt` (ms) falls within one; `slices` lists them. */
function sliced({ grantAt = Infinity, fail } = {}) {
  let clock = 1000;
  const slices = [];
  const attempt = (sliceMs) => {
    slices.push(sliceMs);
    if (fail !== undefined) throw fail;
    const start = clock - 1000;
    if (grantAt <= start + Number(sliceMs)) {
      clock = 1000 + grantAt;
      return 'leader';
    }
    clock += Number(sliceMs);
    throw new LockError(Kind.TIMEOUT);
  };
  return { attempt, slices, now: () => clock };
}

test('a call honouring a signal waits in slices until it returns', () => {
  const { attempt, slices, now } = sliced({ grantAt: 250 });
  const signal = { aborted: false };
  assert.equal(waitInSlices(attempt, undefined, signal, { sliceMs: 100, now }), 'leader');
  assert.deepEqual(slices, [100n, 100n, 100n]);
});

test('a signal aborted while a slice waits throws its reason after that slice', () => {
  const { attempt, slices, now } = sliced();
  const reason = new Error('shutting down');
  const signal = {
    get aborted() {
      return slices.length >= 2;
    },
    reason,
  };
  assert.throws(() => waitInSlices(attempt, undefined, signal, { sliceMs: 100, now }), (e) => e === reason);
  assert.deepEqual(slices, [100n, 100n], 'no slice after the abort');
});

test('an already aborted signal throws before any wait, an AbortError without a reason', () => {
  const { attempt, slices, now } = sliced({ grantAt: 0 });
  assert.throws(
    () => waitInSlices(attempt, undefined, { aborted: true }, { now }),
    (e) => e.name === 'AbortError',
  );
  assert.deepEqual(slices, []);
});

test('slices stop at the timeout: the last is cut to what is left, its timeout thrown', () => {
  const { attempt, slices, now } = sliced();
  assert.throws(
    () => waitInSlices(attempt, 250n, { aborted: false }, { sliceMs: 100, now }),
    (e) => e instanceof LockError && e.kind === Kind.TIMEOUT,
  );
  assert.deepEqual(slices, [100n, 100n, 50n]);
  const zero = sliced();
  assert.throws(() => waitInSlices(zero.attempt, 0n, undefined, { now: zero.now }), LockError);
  assert.deepEqual(zero.slices, [0n], 'a zero timeout tries once');
});

test('an error other than a timeout ends the slices at once', () => {
  const denied = new LockError(Kind.DENIED, 'no');
  const { attempt, slices, now } = sliced({ fail: denied });
  assert.throws(() => waitInSlices(attempt, undefined, { aborted: false }, { now }), (e) => e === denied);
  assert.deepEqual(slices, [100n], 'the default slice is 100 ms');
});
