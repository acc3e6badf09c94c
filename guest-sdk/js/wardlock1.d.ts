// Types of the JavaScript guest SDK for `wardlock:lock@0.1.0` alone (wardlock1.js).
import type {
  AcquireOptions,
  Guard,
  IfAvailableOptions,
  LockSignal,
  Mode,
  Scoped,
} from './wardlock-core.js';

export { Guard, Kind, LockError, LockSignal } from './wardlock-core.js';
export type { AcquireOptions, ErrorKind, Mode, Status } from './wardlock-core.js';

/** Waits until `name` is granted (at most `timeoutMs`, else `'timeout'`). */
export declare function acquire(name: string, options: IfAvailableOptions): Guard | undefined;
export declare function acquire(name: string, options?: AcquireOptions): Guard;
/** The lock if it can be granted without waiting, else undefined. */
export declare function tryAcquire(name: string, options?: { mode?: Mode }): Guard | undefined;
/** Runs `fn(guard, signal)` holding `name`; released however `fn` ends. */
export declare function withLock<R>(name: string, fn: Scoped<Guard, R>): R;
export declare function withLock<R>(
  name: string,
  options: IfAvailableOptions,
  fn: (grant: Guard | null, signal?: LockSignal) => R,
): R;
export declare function withLock<R>(name: string, options: AcquireOptions, fn: Scoped<Guard, R>): R;
