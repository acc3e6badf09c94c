// JavaScript guest SDK for wardlock (`wardlock:lock@0.2.2`): named,
// distributed locks with scoped release (`withLock`, `acquire`, `tryAcquire`,
// as in 0.1.0), plus waiting without blocking, loss notification, several
// locks at once, semaphores, revocation, contenders, the guarded store
// (0.2.2: data written only while its lock stands) and leader election
// (0.2.2). Guests target a world
// of 0.2.x (`js-command2` in plugins/wit/command.wit). `wardlock2.js` is
// another name for this module; `wardlock1.js` is the 0.1.0 edition, for a
// world of 0.1.0 alone.
//
//   import { acquire, acquireMany, acquireAsync, withLocks, wait } from './wardlock.js';
//
//   {
//     using lock = acquire('orders', { timeoutMs: 5000 });
//     if (lock.waitLost(500)) console.log('lost:', lock.status);
//   }                                         // released
//
//   withLocks([['a', 'exclusive'], ['b', 'shared']], { timeoutMs: 5000 }, ([a, b]) => {
//     ...                                     // all released however fn ends
//   });
//
//   {
//     using pending = acquireAsync('orders'); // queued; the guest goes on
//     if (pending.wait(1000)) {               // or poll pending.subscribe()
//       using lock = pending.get();           //   beside a timer, a request
//     }
//   }                                         // a wait not taken is withdrawn
//
//   await Promise.all([                       // awaited: one task queues while
//     acquireAwait('a').then((lock) => ...),  //   the other runs (whenReady)
//     acquireAwait('b').then((lock) => ...),
//   ]);
//
//   withPermit('pool', 3, { timeoutMs: 5000 }, (permit) => { ... });
//   requestRevocation('orders');              // holders see lock.revocationRequested
//
//   {
//     using lock = acquire('orders/42');      // the guarded store (0.2.2):
//     const entry = get('orders/42', 'count'); //   Entry { value, token, revision } or undefined
//     lock.put('count', '7');                 // throws 'lost' if the lock went: nothing written
//   }
//
//   withLeadership('jobs/compactor', 'host-a:8080', (leadership, signal) => {
//     ...                                     // leader election (0.2.2): signal aborts
//   });                                       //   once we may no longer lead; resigned
//   leader('jobs/compactor');                 // { owner, value, term } or undefined
//
// Blocking waits use `wasi:io/poll` with a `wasi:clocks/monotonic-clock`
// timer for the timeout (nothing spins); pollables from `subscribe()` are
// resources to dispose (`using`) before the handle they belong to. Scoped
// helpers accept an async `fn` and keep their locks until its promise settles.
// Errors are `LockError`s (0.2.0 adds `kind` `'invalid-request'`).

import { subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import { poll } from 'wasi:io/poll@0.2.12';
import {
  acquire as rawAcquire,
  acquireAsync as rawAcquireAsync,
  acquireMany as rawAcquireMany,
  acquirePermit as rawAcquirePermit,
  contenders as rawContenders,
  requestRevocation as rawRequestRevocation,
  tryAcquire as rawTryAcquire,
  tryAcquirePermit as rawTryAcquirePermit,
} from 'wardlock:lock/locks@0.2.2';
import {
  delete as rawDelete,
  get as rawGet,
  keys as rawKeys,
  put as rawPut,
} from 'wardlock:lock/guarded@0.2.2';
import {
  campaign as rawCampaign,
  leader as rawLeader,
  observe as rawObserve,
} from 'wardlock:lock/election@0.2.2';
import {
  Guard as BaseGuard,
  Handle,
  Kind,
  LockError,
  LockSignal,
  Owned,
  bytesOf,
  call,
  lockApi,
  millis,
  optionsAndFn,
  runScoped,
  throwIfAborted,
  waitInSlices,
} from './wardlock-core.js';

export { Kind, LockError, LockSignal };

/**
 * Waits until at least one of `pollables` is ready or `timeoutMs`
 * milliseconds passed (undefined: no limit); returns the indices of the
 * ready ones (empty when the timeout came first).
 */
export function readyFirst(pollables, timeoutMs) {
  if (timeoutMs === undefined) return Array.from(poll(pollables));
  using timer = subscribeDuration(millis(timeoutMs) * 1_000_000n);
  return Array.from(poll([...pollables, timer])).filter((i) => i < pollables.length);
}

/** Waits until `pollable` is ready (true) or `timeoutMs` passed (false). */
export function wait(pollable, timeoutMs) {
  return readyFirst([pollable], timeoutMs).length > 0;
}

/** `wait` on a fresh pollable from `subscribe()`, disposed afterwards. */
function waitOn(subscribe, timeoutMs) {
  using pollable = subscribe();
  return wait(pollable, timeoutMs);
}

/** A granted lock with the 0.2.0 calls of its handle. */
export class Guard extends BaseGuard {
  /** A pollable ready once the lock is no longer `'held'` (suspended, lost
   * or released); dispose it before the guard. */
  subscribe() {
    return this.raw().subscribe();
  }

  /** Waits until the lock is no longer `'held'` (true; `status` says what
   * it is now) or `timeoutMs` passed (false). */
  waitLost(timeoutMs) {
    return waitOn(() => this.raw().subscribe(), timeoutMs);
  }

  /** Whether someone asked this holder to give the lock up: releasing is up to you. */
  get revocationRequested() {
    return this.raw().revocationRequested();
  }

  /** A pollable ready once `revocationRequested` is true. */
  subscribeRevocation() {
    return this.raw().subscribeRevocation();
  }

  /** Waits until a revocation is requested (true) or `timeoutMs` passed (false). */
  waitRevocation(timeoutMs) {
    return waitOn(() => this.raw().subscribeRevocation(), timeoutMs);
  }

  /** Writes `value` (a Uint8Array, or a string as UTF-8) under `key` in this
   * lock's store (0.2.2), only if this lock (exclusive) still stands on the
   * lock service at the moment of the write; returns the write's revision (a
   * BigInt). Throws `LockError` `'lost'` when it no longer does (nothing was
   * written), `'released'`, `'invalid-request'` for a shared guard or a bad
   * key, `'limit-exceeded'` for a key over 512 bytes or a value over 65,536,
   * `'unavailable'`. */
  put(key, value) {
    const bytes = bytesOf(value);
    return call(() => rawPut(this.raw(), key, bytes));
  }

  /** Deletes `key` from this lock's store under the rules of `put`: true
   * when there was an entry. */
  delete(key) {
    return call(() => rawDelete(this.raw(), key));
  }
}

/** `acquire`, `tryAcquire` and `withLock` as in `wardlock1.js`, returning 0.2 guards. */
export const { acquire, tryAcquire, withLock } = lockApi(rawAcquire, rawTryAcquire, Guard);

/**
 * An acquisition waiting in the lock's queue (`acquireAsync`) while the
 * guest does other work. Disposing it (`using`) withdraws the wait, or
 * releases the lock if it was granted and not taken with `get`.
 */
export class Pending extends Owned {
  /** A pollable ready once the acquisition finished (granted or failed), to
   * `poll` beside timers and requests; dispose it before the pending lock. */
  subscribe() {
    return this.raw().subscribe();
  }

  /** Waits until the acquisition finished (true) or `timeoutMs` passed
   * (false); the request stays queued either way. */
  wait(timeoutMs) {
    return waitOn(() => this.raw().subscribe(), timeoutMs);
  }

  /** undefined while waiting; then the granted `Guard`, or the acquisition's
   * `LockError` thrown. Once only: later calls throw `'invalid-request'`. */
  get() {
    const result = this.raw().get();
    if (result === undefined) return undefined;
    if (result.tag === 'err') throw new LockError(result.val.tag, result.val.val);
    return new Guard(result.val);
  }

  /** A promise of the lock that waits without blocking the guest: its other
   * promises and timers run meanwhile (`whenReady`). Rejects with
   * `'timeout'` once `timeoutMs` passed (the request stays queued), or with
   * the acquisition's `LockError`. */
  async result(timeoutMs, signal) {
    const ready = this.subscribe();
    let finished;
    try {
      finished = await whenReady(ready, timeoutMs, signal);
    } finally {
      ready[Symbol.dispose]();
    }
    const guard = finished ? this.get() : undefined;
    if (guard === undefined) throw new LockError('timeout');
    return guard;
  }

  // Disposing (Owned's) withdraws the wait: nothing stays queued.
}

/**
 * Resolves with true once `pollable` is ready, or with false once `timeoutMs`
 * passed (none: never), without blocking the guest: its other promises and
 * timers run meanwhile. componentize-js gives a guest no way to add a
 * pollable of its own to the event loop, so readiness is checked (a
 * non-blocking `ready()`) on the loop's timer ticks, 1 ms apart at first and
 * at most 10 ms apart.
 */
export function whenReady(pollable, timeoutMs, signal) {
  const limit = timeoutMs === undefined ? undefined : Number(millis(timeoutMs));
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let delay = 1;
    const check = () => {
      if (pollable.ready()) return resolve(true);
      try {
        throwIfAborted(signal);
      } catch (reason) {
        return reject(reason);
      }
      if (limit !== undefined && Date.now() - started >= limit) return resolve(false);
      setTimeout(check, delay);
      delay = Math.min(10, delay * 2);
    };
    check();
  });
}

/**
 * `acquireAsync(name, options)` awaited: a promise of the `Guard` that lets
 * the guest's other tasks run while it queues (`Pending.result`). Options as
 * `acquireAsync`, plus `signal` (an `AbortSignal`, or anything with `aborted`
 * and `reason`): once it is aborted the wait is withdrawn, nothing stays
 * queued, and the promise rejects with its reason (as the Web Locks API).
 * The timeout counts from now.
 */
export async function acquireAwait(name, { signal, ...options } = {}) {
  throwIfAborted(signal);
  const pending = acquireAsync(name, options);
  try {
    return await pending.result(undefined, signal);
  } finally {
    pending[Symbol.dispose]();
  }
}

/**
 * Queues for `name` in `mode` and returns a `Pending` at once. Bad names,
 * `'denied'`, `'would-deadlock'` and the handle cap throw here; a timeout
 * (counted from now) or a backend failure comes from `Pending.get`.
 */
export function acquireAsync(name, { mode = 'exclusive', timeoutMs } = {}) {
  return new Pending(call(() => rawAcquireAsync(name, { mode, timeoutMs: millis(timeoutMs) })));
}

/**
 * The guards of one `acquireMany`, in the order requested (an array).
 * `releaseAll()` releases every one still held and throws the first error
 * once all are released; disposal (`using`) drops them all quietly.
 */
export class Many extends Array {
  static get [Symbol.species]() {
    return Array;
  }

  releaseAll() {
    let first;
    for (const guard of this) {
      if (!guard.live) continue;
      try {
        guard.release();
      } catch (e) {
        first ??= e;
      }
    }
    if (first !== undefined) throw first;
  }

  /** `'held'` while every guard is, else the first other status. */
  get status() {
    return this.find((guard) => guard.status !== 'held')?.status ?? 'held';
  }

  /** Throws, as `Guard.check()`, unless every guard is safely held. */
  check() {
    for (const guard of this) guard.check();
  }

  /** Aborted once any of the locks is no longer safely held. */
  get signal() {
    return new LockSignal(this);
  }

  /** Alias of `releaseAll`, so `runScoped` can end a `Many` like a guard. */
  release() {
    this.releaseAll();
  }

  [Symbol.dispose]() {
    for (const guard of this) guard[Symbol.dispose]();
  }
}

/**
 * Takes every `[name, mode]` of `requests` as one all-or-nothing request
 * within one deadline (canonical order on the host: no deadlock whatever
 * order two guests list the names in). On any error nothing is held or
 * queued; an empty list or a name listed twice throws `'invalid-request'`.
 */
export function acquireMany(requests, { timeoutMs } = {}) {
  const raw = requests.map(([name, mode = 'exclusive']) => ({ name, mode }));
  const locks = call(() => rawAcquireMany(raw, millis(timeoutMs)));
  const many = new Many();
  for (const lock of locks) many.push(new Guard(lock));
  return many;
}

/** Runs `fn(guards, signal)` holding every lock of `requests` (as `withLock`). */
export function withLocks(requests, options, fn) {
  [options, fn] = optionsAndFn('withLocks(requests, [options], fn)', options, fn);
  return runScoped(acquireMany(requests, options), fn);
}

/** One permit of a counting semaphore, held until `release()` or disposal. */
export class Permit extends Handle {
  constructor(raw) {
    super(raw);
    /** The semaphore's permit count. */
    this.permits = raw.permits();
  }

  /** A pollable ready once the permit is no longer `'held'`. */
  subscribe() {
    return this.raw().subscribe();
  }

  /** Waits until the permit is no longer `'held'` (true) or `timeoutMs` passed. */
  waitLost(timeoutMs) {
    return waitOn(() => this.raw().subscribe(), timeoutMs);
  }
}

/** Waits for one of the `permits` permits of semaphore `name` (at most
 * `timeoutMs`, else `'timeout'`); 0 permits throws `'invalid-request'`. */
export function acquirePermit(name, permits, { timeoutMs } = {}) {
  return new Permit(call(() => rawAcquirePermit(name, permits, millis(timeoutMs))));
}

/** A permit of semaphore `name` if one is free now, else undefined. */
export function tryAcquirePermit(name, permits) {
  const raw = call(() => rawTryAcquirePermit(name, permits));
  return raw === undefined ? undefined : new Permit(raw);
}

/** Runs `fn(permit)` holding a permit of `name` (as `withLock`). */
export function withPermit(name, permits, options, fn) {
  [options, fn] = optionsAndFn('withPermit(name, permits, [options], fn)', options, fn);
  return runScoped(acquirePermit(name, permits, options), fn);
}

/** Asks every holder of `name` to give it up; returns how many were asked. */
export function requestRevocation(name) {
  return call(() => rawRequestRevocation(name));
}

/** One holder or waiter of a lock, as `contenders` lists it. */
export class Contender {
  constructor(raw) {
    /** Who it is, as the lock service records it (may be empty). */
    this.owner = raw.owner;
    /** `'exclusive'` or `'shared'`. */
    this.mode = raw.mode;
    /** True for a holder, false for a waiter. */
    this.holds = raw.holds;
    /** A holder's token (a BigInt) where the lock service records one, else undefined. */
    this.fencingToken = raw.fencingToken;
  }

  /** The contender for `JSON.stringify`, its token as a decimal string. */
  toJSON() {
    const json = { owner: this.owner, mode: this.mode, holds: this.holds };
    if (this.fencingToken !== undefined) json.fencingToken = String(this.fencingToken);
    return json;
  }
}

/**
 * Who holds the lock `name` and who waits for it (kazoo's `contenders()`), in
 * this and every other instance, host or client: `{ contenders, total }`, the
 * first `limit` contenders (holders first, then waiters in arrival order; the
 * host lists at most 1024) and how many there are. A snapshot, stale as soon
 * as it returns. The name must be granted to this guest (`'denied'` otherwise).
 */
export function contenders(name, { limit = 100 } = {}) {
  if (!Number.isInteger(limit) || limit < 0 || limit > 0xffffffff) {
    throw new RangeError(`limit must be an integer from 0 to 4294967295, got ${limit}`);
  }
  const raw = call(() => rawContenders(name, limit));
  return { contenders: raw.contenders.map((c) => new Contender(c)), total: raw.total };
}

/** One entry of a lock's store, as `get` returns it. */
export class Entry {
  constructor(raw) {
    /** The value as written (a Uint8Array). */
    this.value = raw.value;
    /** The fencing token (a BigInt) of the lock whose write made this entry. */
    this.token = raw.token;
    /** The lock service's revision (a BigInt) of that write: it rises with every write. */
    this.revision = raw.revision;
  }

  /** The value decoded as UTF-8. */
  text() {
    return new TextDecoder().decode(this.value);
  }
}

/**
 * The entry `key` of lock `name`'s store (0.2.2), or undefined. Needs no
 * lock (the name must be granted: `'denied'` otherwise): without one, a
 * snapshot that may be stale at once. `'invalid-request'` for a bad key.
 */
export function get(name, key) {
  const raw = call(() => rawGet(name, key));
  return raw === undefined ? undefined : new Entry(raw);
}

/**
 * The keys of lock `name`'s store starting with `prefix`, sorted, at most
 * `limit` (the host lists at most 1024). Errors as `get`.
 */
export function keys(name, prefix = '', limit = 1024) {
  if (!Number.isInteger(limit) || limit < 0 || limit > 0xffffffff) {
    throw new RangeError(`limit must be an integer from 0 to 4294967295, got ${limit}`);
  }
  return call(() => rawKeys(name, prefix, limit));
}

/** This instance's leadership of an election (`campaign`), held until
 * `resign()` or disposal (`using`), which resigns. It follows a lock's loss
 * rules: `status` turns `'lost'` no later than another candidate can win,
 * `signal` aborts and `check()` throws once it no longer safely leads. */
export class Leadership extends Handle {
  constructor(raw) {
    super(raw);
    /** The term (a BigInt): strictly greater than every earlier leader's, a
     * fencing token to hand the resources the leader writes. */
    this.term = raw.term();
  }

  /** The term, as `Handle` names a grant's token. */
  get fencingToken() {
    return this.term;
  }

  /** The value this leader proclaims now. */
  get value() {
    return this.raw().value();
  }

  /** A pollable ready once this no longer leads (suspended, lost or
   * resigned); dispose it before the leadership. */
  subscribe() {
    return this.raw().subscribe();
  }

  /** Waits until this no longer leads (true; `status` says what it is now)
   * or `timeoutMs` passed (false). */
  waitLost(timeoutMs) {
    return waitOn(() => this.raw().subscribe(), timeoutMs);
  }

  /** Replaces the proclaimed value while this leads (observers see it).
   * Throws `'lost'` when it no longer leads, `'released'` once resigned,
   * `'limit-exceeded'` for a value over 4096 bytes. */
  proclaim(value) {
    call(() => this.raw().proclaim(value));
  }

  /** Writes `value` (a Uint8Array, or a string as UTF-8) under `key` in the
   * election name's guarded store, only while this leads; the write's
   * revision (a BigInt). Errors as `Guard.put`. */
  put(key, value) {
    const bytes = bytesOf(value);
    return call(() => this.raw().put(key, bytes));
  }

  /** Steps down now: the next candidate leads. Throws `'lost'` if the
   * leadership had been lost, `'released'` if resigned already. */
  resign() {
    const raw = this.raw();
    try {
      call(() => raw.resign());
    } finally {
      this[Symbol.dispose]();
    }
  }

  /** `resign()`, so `withLeadership` ends a leadership like a guard. */
  release() {
    this.resign();
  }

  /** The name, status, term (a decimal string) and, while it leads, the value. */
  toJSON() {
    const json = { name: this.name, status: this.status, term: String(this.term) };
    if (this.live) json.value = this.value;
    return json;
  }
}

/**
 * Campaigns for election `name` with `value` (0.2.2): waits until this
 * instance leads, at most `timeoutMs` (else `'timeout'`; undefined waits
 * until elected), and returns its `Leadership`. Interoperable with
 * Curator's `LeaderLatch` on ZooKeeper and `etcdctl elect` on etcd.
 *
 * `signal` (an `AbortSignal`, or anything with `aborted` and `reason`), as
 * `acquire`'s: an aborted signal throws its reason before campaigning. A
 * blocking campaign cannot be interrupted, so with a signal it campaigns in
 * slices of at most `SIGNAL_SLICE_MS` (100 ms), checking the signal between
 * them (`waitInSlices`): a signal whose `aborted` turns true meanwhile (a
 * grant's `signal`, a getter of your own) ends it within one slice, its
 * reason thrown. Each slice is a candidacy of its own, so a candidate with a
 * signal queues again behind whoever campaigned during its last slice.
 * Errors: `'invalid-name'`, `'denied'` as for locks, `'limit-exceeded'`,
 * `'unavailable'`.
 */
export function campaign(name, value, { timeoutMs, signal } = {}) {
  throwIfAborted(signal);
  const run = (sliceMs) => call(() => rawCampaign(name, value, sliceMs));
  const timeout = millis(timeoutMs);
  const raw = signal === undefined || signal === null ? run(timeout) : waitInSlices(run, timeout, signal);
  return new Leadership(raw);
}

/** Runs `fn(leadership, signal)` leading election `name` with `value` (as
 * `withLock`: `signal` aborts once it no longer safely leads; it resigns
 * however `fn` ends, and a leadership lost meanwhile throws `'lost'`).
 * Options as `campaign`. */
export function withLeadership(name, value, options, fn) {
  [options, fn] = optionsAndFn('withLeadership(name, value, [options], fn)', options, fn);
  return runScoped(campaign(name, value, options), fn);
}

/** Who leads an election, as `leader` and `Observer.leader` return it. */
export class LeaderInfo {
  constructor(raw) {
    /** Who leads, as the lock service records it. */
    this.owner = raw.owner;
    /** The value the leader proclaimed. */
    this.value = raw.value;
    /** The leader's term (a BigInt): its fencing token. */
    this.term = raw.term;
  }

  /** The leader for `JSON.stringify`, its term as a decimal string. */
  toJSON() {
    return { owner: this.owner, value: this.value, term: String(this.term) };
  }
}

function leaderInfo(raw) {
  return raw === undefined ? undefined : new LeaderInfo(raw);
}

/** Who leads election `name` now (undefined: nobody campaigns). Throws
 * `'invalid-name'`, `'denied'`, `'unavailable'`. */
export function leader(name) {
  return leaderInfo(call(() => rawLeader(name)));
}

/** Follows an election's leader (`observe`); dispose it (`using`) when done. */
export class Observer extends Owned {
  constructor(raw, name) {
    super(raw);
    /** The election's name. */
    this.name = name;
  }

  /** The leader now (undefined: nobody campaigns); `subscribe` compares
   * against it from then on. Throws `'unavailable'`. */
  leader() {
    return leaderInfo(call(() => this.raw().leader()));
  }

  /** A pollable ready once the leader (or its value or term) differs from
   * the one `leader()` last returned; dispose it before the observer. */
  subscribe() {
    return this.raw().subscribe();
  }

  /** Waits until the leader differs from the one `leader()` last returned
   * (true; call `leader()` for the new one) or `timeoutMs` passed (false). */
  waitChanged(timeoutMs) {
    return waitOn(() => this.raw().subscribe(), timeoutMs);
  }

  /** A promise of the next change (true), or false once `timeoutMs`
   * passed, that lets the guest's other tasks run meanwhile (`whenReady`);
   * rejects with `signal`'s reason once it is aborted. */
  async changed(timeoutMs, signal) {
    const ready = this.subscribe();
    try {
      return await whenReady(ready, timeoutMs, signal);
    } finally {
      ready[Symbol.dispose]();
    }
  }

  // Disposing (Owned's) drops the observer.
}

/** An observer of election `name`. Throws `'invalid-name'`, `'denied'`,
 * `'limit-exceeded'`. */
export function observe(name) {
  return new Observer(call(() => rawObserve(name)), name);
}
