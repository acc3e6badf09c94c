// JavaScript guest SDK for wardlock: named, distributed locks with scoped
// release, over the `wardlock:lock/locks@0.1.0` import componentize-js binds.
//
//   import { withLock, acquire, tryAcquire, LockError } from './wardlock.js';
//
//   withLock('orders', { timeoutMs: 5000 }, (lock) => {
//     charge(order, lock.fencingToken);
//   });                                   // released however `fn` ends
//
//   {
//     using lock = acquire('config', { mode: 'shared' });
//     ...
//   }                                     // disposed: released
//   // without `using`: try { ... } finally { lock[Symbol.dispose](); }
//
// Errors are `LockError`s whose `kind` is the WIT case (`'invalid-name'`,
// `'timeout'`, `'lost'`, ...) and `detail` the host's text, if any. A guard
// never released is released by the host when the instance ends.
//
// Bundled into a guest by componentize-js, which follows relative imports.

import { acquire as rawAcquire, tryAcquire as rawTryAcquire } from 'wardlock:lock/locks@0.1.0';

/** A lock call failed; `kind` names the WIT error case. Nothing is left half-acquired. */
export class LockError extends Error {
  constructor(kind, detail) {
    super(detail === undefined ? kind : `${kind}: ${detail}`);
    this.name = 'LockError';
    /** `'invalid-name'`, `'denied'`, `'timeout'`, `'would-deadlock'`, `'lost'`, `'released'`, `'limit-exceeded'` or `'unavailable'`. */
    this.kind = kind;
    /** The host's text for the cases that carry one, else undefined. */
    this.detail = detail;
  }
}

/** Runs a raw binding call, turning a thrown WIT `error` into a `LockError`. */
function call(operation) {
  try {
    return operation();
  } catch (e) {
    const payload = e?.payload;
    if (typeof payload?.tag !== 'string') throw e;
    throw new LockError(payload.tag, payload.val);
  }
}

/** A granted lock, held until `release()` or disposal. */
export class Guard {
  #raw;

  constructor(raw) {
    this.#raw = raw;
    /** The lock name as acquired. */
    this.name = raw.name();
    /** `'exclusive'` or `'shared'`. */
    this.mode = raw.mode();
  }

  /** A BigInt, strictly greater for every later conflicting grant of this
   * name: hand it to the resource you protect so it can refuse stale writers. */
  get fencingToken() {
    return this.#handle().fencingToken();
  }

  /** `'held'`, `'suspended'`, `'lost'` or `'released'`: check it before steps
   * that must not run unprotected. */
  get status() {
    return this.#raw === undefined ? 'released' : this.#raw.status();
  }

  /** Releases the lock now; throws `LockError` `'lost'` if it had been lost
   * meanwhile and `'released'` if this guard was released already. */
  release() {
    const raw = this.#handle();
    try {
      call(() => raw.release());
    } finally {
      this[Symbol.dispose]();
    }
  }

  /** Drops the handle, which releases the lock without an answer; does
   * nothing once released. What `using` and `withLock` call on the way out. */
  [Symbol.dispose]() {
    const raw = this.#raw;
    this.#raw = undefined;
    raw?.[Symbol.dispose]();
  }

  #handle() {
    if (this.#raw === undefined) throw new LockError('released');
    return this.#raw;
  }
}

/**
 * Waits until `name` is granted in `mode` (`'exclusive'`, the default, or
 * `'shared'`), at most `timeoutMs` milliseconds (then `LockError` `'timeout'`;
 * undefined waits until granted or the instance's deadline).
 */
export function acquire(name, { mode = 'exclusive', timeoutMs } = {}) {
  const opts = { mode, timeoutMs: timeoutMs === undefined ? undefined : BigInt(Math.ceil(Number(timeoutMs))) };
  return new Guard(call(() => rawAcquire(name, opts)));
}

/** `name` in `mode` if it can be granted without waiting, else undefined. */
export function tryAcquire(name, { mode = 'exclusive' } = {}) {
  const raw = call(() => rawTryAcquire(name, mode));
  return raw === undefined ? undefined : new Guard(raw);
}

/**
 * Runs `fn(guard)` holding `name` and returns what it returns. When `fn` ends
 * normally the release is checked (a lock lost meanwhile throws `'lost'`, so
 * its work is not silently trusted); when it throws, the lock is released
 * quietly and `fn`'s error goes on. An async `fn` keeps the lock until its
 * promise settles (acquiring itself blocks the instance).
 */
export function withLock(name, options, fn) {
  const guard = acquire(name, options);
  let result;
  try {
    result = fn(guard);
  } catch (e) {
    guard[Symbol.dispose]();
    throw e;
  }
  if (typeof result?.then !== 'function') {
    guard.release();
    return result;
  }
  return result.then(
    (value) => {
      guard.release();
      return value;
    },
    (e) => {
      guard[Symbol.dispose]();
      throw e;
    },
  );
}
