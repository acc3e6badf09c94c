// Types of the JavaScript guest SDK for `wardlock:lock@0.2.2` (wardlock.js; wardlock2.js re-exports it).
import type {
  AcquireOptions,
  Guard as BaseGuard,
  Handle,
  IfAvailableOptions,
  LockSignal,
  Mode,
  Scoped,
} from './wardlock-core.js';

export { Kind, LockError, LockSignal } from './wardlock-core.js';
export type { AcquireOptions, ErrorKind, Mode, Status } from './wardlock-core.js';

/** A `wasi:io/poll` pollable, as componentize-js binds it. */
export interface Pollable extends Disposable {
  ready(): boolean;
  block(): void;
}

/** Indices of the ready `pollables` once one is ready or `timeoutMs` passed. */
export declare function readyFirst(pollables: Pollable[], timeoutMs?: number | bigint): number[];
/** Whether `pollable` got ready within `timeoutMs`. */
export declare function wait(pollable: Pollable, timeoutMs?: number | bigint): boolean;

/** A granted lock with the 0.2.0 calls of its handle. */
export declare class Guard extends BaseGuard {
  subscribe(): Pollable;
  waitLost(timeoutMs?: number | bigint): boolean;
  readonly revocationRequested: boolean;
  subscribeRevocation(): Pollable;
  waitRevocation(timeoutMs?: number | bigint): boolean;
  /** Writes `value` (a string as UTF-8) under `key` in this lock's store
   * while the lock (exclusive) stands; the write's revision. Throws
   * `'lost'` (nothing written), `'released'`, `'invalid-request'`, ... */
  put(key: string, value: Uint8Array | string): bigint;
  /** Deletes `key` under the rules of `put`: whether there was an entry. */
  delete(key: string): boolean;
}

export declare function acquire(name: string, options: IfAvailableOptions): Guard | undefined;
export declare function acquire(name: string, options?: AcquireOptions): Guard;
export declare function tryAcquire(name: string, options?: { mode?: Mode }): Guard | undefined;
export declare function withLock<R>(name: string, fn: Scoped<Guard, R>): R;
export declare function withLock<R>(
  name: string,
  options: IfAvailableOptions,
  fn: (grant: Guard | null, signal?: LockSignal) => R,
): R;
export declare function withLock<R>(name: string, options: AcquireOptions, fn: Scoped<Guard, R>): R;

/** An acquisition waiting in the lock's queue while the guest does other work. */
export declare class Pending implements Disposable {
  subscribe(): Pollable;
  wait(timeoutMs?: number | bigint): boolean;
  /** undefined while waiting; then the guard, or the acquisition's error thrown. */
  get(): Guard | undefined;
  /** The lock, awaited without blocking the guest (other promises and timers
   * run); rejects with `'timeout'` after `timeoutMs`, or with `signal`'s
   * reason once it is aborted. */
  result(timeoutMs?: number | bigint, signal?: AcquireOptions['signal']): Promise<Guard>;
  [Symbol.dispose](): void;
}
export declare function acquireAsync(name: string, options?: AcquireOptions): Pending;
/** Resolves true once `pollable` is ready, false after `timeoutMs`, rejects
 * with `signal`'s reason once it is aborted; the guest's other tasks run
 * meanwhile. */
export declare function whenReady(
  pollable: { ready(): boolean },
  timeoutMs?: number | bigint,
  signal?: AcquireOptions['signal'],
): Promise<boolean>;
/** `acquireAsync` awaited: the guest's other tasks run while it queues; an
 * aborted `signal` withdraws the wait and rejects with its reason. */
export declare function acquireAwait(name: string, options?: AcquireOptions): Promise<Guard>;

/** The guards of one `acquireMany`, in the order requested. */
export declare class Many extends Array<Guard> implements Disposable {
  readonly status: 'held' | 'suspended' | 'lost' | 'released';
  readonly signal: import('./wardlock-core.js').LockSignal;
  check(): void;
  releaseAll(): void;
  release(): void;
  [Symbol.dispose](): void;
}
export type Request = [name: string, mode?: Mode];
export declare function acquireMany(requests: Request[], options?: { timeoutMs?: number | bigint }): Many;
export declare function withLocks<R>(requests: Request[], fn: Scoped<Many, R>): R;
export declare function withLocks<R>(
  requests: Request[],
  options: { timeoutMs?: number | bigint },
  fn: Scoped<Many, R>,
): R;

/** One permit of a counting semaphore. */
export declare class Permit extends Handle {
  readonly permits: number;
  subscribe(): Pollable;
  waitLost(timeoutMs?: number | bigint): boolean;
}
export declare function acquirePermit(
  name: string,
  permits: number,
  options?: { timeoutMs?: number | bigint },
): Permit;
export declare function tryAcquirePermit(name: string, permits: number): Permit | undefined;
export declare function withPermit<R>(name: string, permits: number, fn: Scoped<Permit, R>): R;
export declare function withPermit<R>(
  name: string,
  permits: number,
  options: { timeoutMs?: number | bigint },
  fn: Scoped<Permit, R>,
): R;
/** Asks every holder of `name` to give it up; returns how many were asked. */
export declare function requestRevocation(name: string): number;

/** One holder or waiter of a lock, as `contenders` lists it. */
export declare class Contender {
  /** Who it is, as the lock service records it (may be empty). */
  readonly owner: string;
  readonly mode: Mode;
  /** True for a holder, false for a waiter. */
  readonly holds: boolean;
  /** A holder's token where the lock service records one. */
  readonly fencingToken: bigint | undefined;
  /** The token as a decimal string. */
  toJSON(): { owner: string; mode: Mode; holds: boolean; fencingToken?: string };
}

/**
 * Who holds the lock `name` and who waits for it: the first `limit` (default
 * 100; at most 1024 are listed) contenders, holders first, and how many there
 * are in all. Throws `RangeError` for a bad limit, `LockError` as `acquire`.
 */
export declare function contenders(
  name: string,
  options?: { limit?: number },
): { contenders: Contender[]; total: number };

/** One entry of a lock's store (0.2.2). */
export declare class Entry {
  /** The value as written. */
  readonly value: Uint8Array;
  /** The fencing token of the lock whose write made this entry. */
  readonly token: bigint;
  /** The lock service's revision of that write (rises with every write). */
  readonly revision: bigint;
  /** The value decoded as UTF-8. */
  text(): string;
}

/** The entry `key` of lock `name`'s store, or undefined (needs no lock). */
export declare function get(name: string, key: string): Entry | undefined;
/** The keys of lock `name`'s store starting with `prefix` (default `''`),
 * sorted, at most `limit` (default and most 1024). */
export declare function keys(name: string, prefix?: string, limit?: number): string[];
