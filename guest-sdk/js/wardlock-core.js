// The part of the JavaScript guest SDK both WIT versions share: the typed
// error, the guard over a granted resource and scoped release. It imports no
// WIT interface, so `wardlock1.js` (0.1.0) and `wardlock.js` (0.2) each
// bind it to their version's functions. Guests import those, not this file.

/** A lock call failed; `kind` names the WIT error case. Nothing is left half-acquired. */
export class LockError extends Error {
  constructor(kind, detail) {
    super(detail === undefined ? kind : `${kind}: ${detail}`);
    this.name = 'LockError';
    /** `'invalid-name'`, `'denied'`, `'timeout'`, `'would-deadlock'`, `'lost'`,
     * `'released'`, `'limit-exceeded'`, `'unavailable'` or (0.2.0) `'invalid-request'`. */
    this.kind = kind;
    /** The host's text for the cases that carry one, else undefined. */
    this.detail = detail;
  }
}

/** The WIT error cases, as `LockError.kind` spells them: compare
 * `error.kind === Kind.TIMEOUT` rather than a string literal. */
export const Kind = Object.freeze({
  INVALID_NAME: 'invalid-name',
  DENIED: 'denied',
  TIMEOUT: 'timeout',
  WOULD_BLOCK: 'would-block',
  WOULD_DEADLOCK: 'would-deadlock',
  LOST: 'lost',
  RELEASED: 'released',
  LIMIT_EXCEEDED: 'limit-exceeded',
  UNAVAILABLE: 'unavailable',
  INVALID_REQUEST: 'invalid-request',
});

/** Runs a raw binding call, turning a thrown WIT `error` into a `LockError`. */
export function call(operation) {
  try {
    return operation();
  } catch (e) {
    const payload = e?.payload;
    if (typeof payload?.tag !== 'string') throw e;
    throw new LockError(payload.tag, payload.val);
  }
}

/** Milliseconds as the WIT's `option<u64>` (a BigInt, rounded up), or
 * undefined; a `RangeError` naming `timeoutMs` for anything but a finite
 * number ≥ 0 (or a BigInt ≥ 0). */
export function millis(timeoutMs) {
  if (timeoutMs === undefined) return undefined;
  if (typeof timeoutMs === 'bigint' && timeoutMs >= 0n) return timeoutMs;
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new RangeError(`timeoutMs must be a finite number of milliseconds >= 0, got ${String(timeoutMs)}`);
  }
  return BigInt(Math.ceil(timeoutMs));
}

/** A guarded store's value as the WIT's `list<u8>`: a `Uint8Array` as it
 * is, a string as its UTF-8 bytes; a `TypeError` for anything else. */
export function bytesOf(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return new TextEncoder().encode(value);
  throw new TypeError(`a value is a Uint8Array or a string, got ${value === null ? 'null' : typeof value}`);
}

/** A raw host resource owned by one SDK object (a pending acquisition, an
 * election observer): `raw()` gives it until the object is disposed, then
 * throws `'released'`; disposing drops it, and does nothing a second time. */
export class Owned {
  #raw;

  constructor(raw) {
    this.#raw = raw;
  }

  /** The host resource; throws `LockError` `'released'` once disposed. */
  raw() {
    if (this.#raw === undefined) throw new LockError('released');
    return this.#raw;
  }

  /** Drops the host resource; a no-op once disposed. */
  [Symbol.dispose]() {
    const raw = this.#raw;
    this.#raw = undefined;
    raw?.[Symbol.dispose]();
  }
}

/** A held grant over a raw resource (a lock, or a 0.2.0 permit), held until
 * `release()` or disposal. */
export class Handle {
  #raw;

  constructor(raw) {
    this.#raw = raw;
    /** The name as acquired. */
    this.name = raw.name();
  }

  /** A BigInt, strictly greater for every later conflicting grant of this
   * name: hand it to the resource you protect so it can refuse stale writers. */
  get fencingToken() {
    return this.raw().fencingToken();
  }

  /** `'held'`, `'suspended'`, `'lost'` or `'released'`: check it before steps
   * that must not run unprotected. */
  get status() {
    return this.#raw === undefined ? 'released' : this.#raw.status();
  }

  /** An AbortSignal-like view of this grant for the work done under it:
   * `signal.aborted` turns true once the lock is no longer safely held, and
   * `signal.reason` (a `LockError`) names why: `'lost'`, `'unavailable'`
   * (suspended: the host lost contact with the lock service) or
   * `'released'`. Read from the host on each access, so a loop checking it
   * stops at its next step. */
  get signal() {
    return new LockSignal(this);
  }

  /** Returns while the lock is safely held; otherwise throws the
   * `LockError` `signal.reason` names. */
  check() {
    const reason = lossOf(this.status);
    if (reason !== undefined) throw reason;
  }

  /** What `JSON.stringify` writes: the name, the status and, while held,
   * the fencing token as a decimal string (JSON has no BigInt). */
  toJSON() {
    const json = { name: this.name, status: this.status };
    if (this.live) json.fencingToken = String(this.fencingToken);
    return json;
  }

  /** Whether the handle is still held by this guard (not released or disposed). */
  get live() {
    return this.#raw !== undefined;
  }

  /** Releases now; throws `LockError` `'lost'` if it had been lost
   * meanwhile and `'released'` if this guard was released already. */
  release() {
    const raw = this.raw();
    try {
      call(() => raw.release());
    } finally {
      this[Symbol.dispose]();
    }
  }

  /** Drops the handle, which releases it without an answer; does nothing
   * once released. What `using` and `withLock` call on the way out. */
  [Symbol.dispose]() {
    const raw = this.#raw;
    this.#raw = undefined;
    raw?.[Symbol.dispose]();
  }

  /** The raw resource; throws `LockError` `'released'` once released. */
  raw() {
    if (this.#raw === undefined) throw new LockError('released');
    return this.#raw;
  }
}

/** Why a grant in `status` is not safely held (a `LockError`), or
 * undefined when it is held. */
function lossOf(status) {
  switch (status) {
    case 'held':
      return undefined;
    case 'suspended':
      return new LockError(
        Kind.UNAVAILABLE,
        'the lock is suspended: the host lost contact with the lock service',
      );
    case 'lost':
      return new LockError(Kind.LOST);
    default:
      return new LockError(Kind.RELEASED);
  }
}

/** What `handle.signal` returns: the parts of `AbortSignal` a block of work
 * reads (`aborted`, `reason`, `throwIfAborted()`), asked of the host on
 * each access rather than pushed, since a guest runs no code between its
 * own steps. */
export class LockSignal {
  #handle;

  constructor(handle) {
    this.#handle = handle;
  }

  /** True once the lock is no longer safely held. */
  get aborted() {
    return this.#handle.status !== 'held';
  }

  /** The `LockError` saying why it is not held, or undefined while held. */
  get reason() {
    return lossOf(this.#handle.status);
  }

  /** Throws `reason` once aborted. */
  throwIfAborted() {
    this.#handle.check();
  }
}

/** A granted lock, held until `release()` or disposal. */
export class Guard extends Handle {
  constructor(raw) {
    super(raw);
    /** `'exclusive'` or `'shared'`. */
    this.mode = raw.mode();
  }

  toJSON() {
    return { ...super.toJSON(), mode: this.mode };
  }
}

/**
 * Runs `fn(scope, scope.signal)` and then releases `scope` (a `Handle`, or
 * anything with `release()`, `[Symbol.dispose]()` and `signal`), returning
 * what `fn` returns; `signal.aborted` tells `fn` when the grant stopped
 * being safely held. When `fn` ends normally
 * the release is checked (a lock lost meanwhile throws `'lost'`, so its work
 * is not silently trusted) unless `fn` released it itself (`scope.live` is
 * then false: releasing early is allowed); when it throws, `scope` is
 * disposed quietly and `fn`'s error goes on. An async `fn` keeps it until its
 * promise settles.
 */
export function runScoped(scope, fn) {
  let result;
  try {
    result = fn(scope, scope.signal);
  } catch (e) {
    scope[Symbol.dispose]();
    throw e;
  }
  const finish = () => {
    if (scope.live !== false) scope.release();
  };
  if (typeof result?.then !== 'function') {
    finish();
    return result;
  }
  return result.then(
    (value) => {
      finish();
      return value;
    },
    (e) => {
      scope[Symbol.dispose]();
      throw e;
    },
  );
}

/**
 * The `[options], fn` tail of the scoped calls (`withLock(name, fn)` or
 * `withLock(name, options, fn)`): returns `[options, fn]`; a `TypeError`
 * naming `call` when there is no function.
 */
export function optionsAndFn(call, options, fn) {
  if (typeof options === 'function' && fn === undefined) [options, fn] = [undefined, options];
  if (typeof fn !== 'function') throw new TypeError(`${call}: the last argument must be a function`);
  return [options, fn];
}

/**
 * Throws once `signal` (an `AbortSignal`, or anything with `aborted` and
 * `reason`) is aborted: its `reason`, or an `Error` named `'AbortError'`
 * when it has none (as the Web Locks API rejects).
 */
export function throwIfAborted(signal) {
  if (signal === undefined || signal === null || !signal.aborted) return;
  if (signal.reason !== undefined) throw signal.reason;
  const error = new Error('the wait for the lock was aborted');
  error.name = 'AbortError';
  throw error;
}

/** The longest single wait of a call that honours a `signal` by waiting in
 * slices (`waitInSlices`), in milliseconds. */
export const SIGNAL_SLICE_MS = 100;

/**
 * Runs `attempt(sliceMs)`, a blocking call given a timeout in milliseconds
 * (a BigInt) that throws `LockError` `'timeout'` when it passes, again and
 * again in slices of at most `sliceMs` until it returns, `timeoutMs` (a
 * BigInt, or undefined: no limit) has passed (the last slice's `'timeout'`
 * is thrown) or `signal` is aborted: `throwIfAborted` before every slice,
 * so an aborted signal throws its reason within one slice. A blocking call
 * cannot be interrupted, so this is how one honours a signal whose
 * `aborted` turns true while the guest waits (a grant's `signal`, or any
 * object with an `aborted` getter). `now` reads a millisecond clock.
 */
export function waitInSlices(attempt, timeoutMs, signal, { sliceMs = SIGNAL_SLICE_MS, now = Date.now } = {}) {
  const deadline = timeoutMs === undefined ? undefined : now() + Number(timeoutMs);
  for (;;) {
    throwIfAborted(signal);
    const left = deadline === undefined ? Infinity : Math.max(0, deadline - now());
    const slice = Math.min(sliceMs, left);
    try {
      return attempt(BigInt(Math.ceil(slice)));
    } catch (e) {
      if (!(e instanceof LockError) || e.kind !== Kind.TIMEOUT || slice >= left) throw e;
    }
  }
}

/**
 * The one-lock calls over a WIT version's raw `acquire` and `tryAcquire`,
 * wrapping each granted lock in `GuardClass` (see `wardlock.js` for their
 * use).
 *
 * As in the Web Locks API, `ifAvailable: true` takes the lock only if that
 * needs no waiting (`acquire` returns undefined, `withLock` calls `fn(null)`
 * when it would wait), and `signal` aborts the request: an aborted signal
 * throws its reason before anything is queued (a blocking wait cannot be
 * interrupted; `acquireAwait` watches the signal while it waits). Asking for
 * `ifAvailable` with `timeoutMs` or `signal` is a `TypeError`.
 */
export function lockApi(rawAcquire, rawTryAcquire, GuardClass) {
  const tryAcquire = (name, { mode = 'exclusive' } = {}) => {
    const raw = call(() => rawTryAcquire(name, mode));
    return raw === undefined ? undefined : new GuardClass(raw);
  };
  const acquire = (name, { mode = 'exclusive', timeoutMs, signal, ifAvailable = false } = {}) => {
    if (ifAvailable && (timeoutMs !== undefined || signal !== undefined)) {
      throw new TypeError('ifAvailable cannot be combined with timeoutMs or signal: it never waits');
    }
    if (ifAvailable) return tryAcquire(name, { mode });
    throwIfAborted(signal);
    return new GuardClass(call(() => rawAcquire(name, { mode, timeoutMs: millis(timeoutMs) })));
  };
  const withLock = (name, options, fn) => {
    [options, fn] = optionsAndFn('withLock(name, [options], fn)', options, fn);
    const guard = acquire(name, options);
    // ifAvailable, and busy: the Web Locks API calls back with null.
    if (guard === undefined) return fn(null);
    return runScoped(guard, fn);
  };
  return { acquire, tryAcquire, withLock };
}
