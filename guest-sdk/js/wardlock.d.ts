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
import type { Status } from './wardlock-core.js';

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

/** This instance's leadership of an election (0.2.2); disposal resigns. */
export declare class Leadership extends Handle {
  /** Strictly greater than every earlier leader's term (a fencing token). */
  readonly term: bigint;
  /** The term. */
  readonly fencingToken: bigint;
  /** The value this leader proclaims now. */
  readonly value: string;
  subscribe(): Pollable;
  waitLost(timeoutMs?: number | bigint): boolean;
  /** Replaces the proclaimed value while this leads; throws `'lost'` otherwise. */
  proclaim(value: string): void;
  /** A guarded write under the election's name, only while this leads. */
  put(key: string, value: Uint8Array | string): bigint;
  /** Steps down; throws `'lost'` if it had been lost, `'released'` the second time. */
  resign(): void;
  toJSON(): { name: string; status: Status; fencingToken?: string; term?: string; value?: string };
}

export interface CampaignOptions {
  /** Give up with `'timeout'` after this many milliseconds; undefined waits. */
  timeoutMs?: number | bigint;
  /** Aborts the campaign (throws its `reason`): checked before it, and with
   * a signal the campaign waits in slices of at most 100 ms checking it
   * between them. */
  signal?: AcquireOptions['signal'];
}

/** Waits until this instance leads election `name` with `value`. */
export declare function campaign(name: string, value: string, options?: CampaignOptions): Leadership;
export declare function withLeadership<R>(name: string, value: string, fn: Scoped<Leadership, R>): R;
export declare function withLeadership<R>(
  name: string,
  value: string,
  options: CampaignOptions,
  fn: Scoped<Leadership, R>,
): R;

/** Who leads an election. */
export declare class LeaderInfo {
  readonly owner: string;
  readonly value: string;
  readonly term: bigint;
  toJSON(): { owner: string; value: string; term: string };
}

/** Who leads election `name` now (undefined: nobody campaigns). */
export declare function leader(name: string): LeaderInfo | undefined;

/** Follows an election's leader. */
export declare class Observer implements Disposable {
  readonly name: string;
  leader(): LeaderInfo | undefined;
  /** Ready once the leader differs from the one `leader()` last returned. */
  subscribe(): Pollable;
  waitChanged(timeoutMs?: number | bigint): boolean;
  /** The next change, awaited without blocking the guest. */
  changed(timeoutMs?: number | bigint, signal?: AcquireOptions['signal']): Promise<boolean>;
  [Symbol.dispose](): void;
}
export declare function observe(name: string): Observer;
