// Types of the part of the JavaScript guest SDK both WIT versions share
// (wardlock-core.js). Guests import wardlock.js or wardlock2.js, whose .d.ts
// re-export these.

/** The WIT error cases, as `LockError.kind` spells them. */
export declare const Kind: {
  readonly INVALID_NAME: 'invalid-name';
  readonly DENIED: 'denied';
  readonly TIMEOUT: 'timeout';
  readonly WOULD_BLOCK: 'would-block';
  readonly WOULD_DEADLOCK: 'would-deadlock';
  readonly LOST: 'lost';
  readonly RELEASED: 'released';
  readonly LIMIT_EXCEEDED: 'limit-exceeded';
  readonly UNAVAILABLE: 'unavailable';
  readonly INVALID_REQUEST: 'invalid-request';
};

export type ErrorKind = (typeof Kind)[keyof typeof Kind];
export type Mode = 'exclusive' | 'shared';
export type Status = 'held' | 'suspended' | 'lost' | 'released';

/** A lock call failed; `kind` names the WIT error case. Nothing is left half-acquired. */
export declare class LockError extends Error {
  constructor(kind: ErrorKind, detail?: string);
  readonly kind: ErrorKind;
  /** The host's text for the cases that carry one. */
  readonly detail: string | undefined;
}

/** An AbortSignal-like view of a grant: aborted once it is no longer safely held. */
export declare class LockSignal {
  readonly aborted: boolean;
  /** Why it is not held (`'lost'`, `'unavailable'` when suspended, `'released'`). */
  readonly reason: LockError | undefined;
  throwIfAborted(): void;
}

/** A held grant (a lock, or a 0.2.0 permit). */
export declare class Handle implements Disposable {
  readonly name: string;
  /** Strictly greater for every later conflicting grant of this name. */
  readonly fencingToken: bigint;
  readonly status: Status;
  readonly signal: LockSignal;
  /** Whether this guard still holds its handle (not released or disposed). */
  readonly live: boolean;
  /** Throws the `LockError` `signal.reason` names unless safely held. */
  check(): void;
  /** Releases now; throws `'lost'` if it was lost meanwhile, `'released'` the second time. */
  release(): void;
  /** The name, status and token (a decimal string) for `JSON.stringify`. */
  toJSON(): { name: string; status: Status; fencingToken?: string };
  [Symbol.dispose](): void;
}

/** A granted lock. */
export declare class Guard extends Handle {
  readonly mode: Mode;
  toJSON(): { name: string; status: Status; fencingToken?: string; mode: Mode };
}

export interface AcquireOptions {
  /** Default `'exclusive'`. */
  mode?: Mode;
  /** Give up with `'timeout'` after this many milliseconds; undefined waits. */
  timeoutMs?: number | bigint;
  /** Aborts the request (throws its `reason`): checked before a blocking
   * wait, and throughout `acquireAwait`'s wait. */
  signal?: { readonly aborted: boolean; readonly reason?: unknown };
}

/** `ifAvailable: true` (Web Locks): take the lock only if that needs no
 * waiting; never with `timeoutMs` or `signal`. */
export interface IfAvailableOptions {
  mode?: Mode;
  ifAvailable: true;
}

/** Throws `signal.reason` (an `AbortError` when it has none) once aborted. */
export declare function throwIfAborted(signal: AcquireOptions['signal'] | null): void;

/** The longest single wait of a call honouring a `signal` (`waitInSlices`), in ms. */
export declare const SIGNAL_SLICE_MS: number;

/** Runs the blocking `attempt(sliceMs)` in slices of at most `sliceMs`
 * until it returns, `timeoutMs` passed (its `'timeout'` thrown) or `signal`
 * is aborted (its reason thrown, checked before every slice). */
export declare function waitInSlices<T>(
  attempt: (sliceMs: bigint) => T,
  timeoutMs: bigint | undefined,
  signal: AcquireOptions['signal'] | null,
  options?: { sliceMs?: number; now?: () => number },
): T;

/** A value as the WIT's `list<u8>`: a Uint8Array as it is, a string as UTF-8. */
export declare function bytesOf(value: Uint8Array | string): Uint8Array;

/** The block a scoped call runs: it gets the grant and its signal. */
export type Scoped<G, R> = (grant: G, signal: LockSignal) => R;
