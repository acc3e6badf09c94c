// JavaScript guest SDK for wardlock, 0.1.0 edition: named, distributed locks
// with scoped release, over the `wardlock:lock/locks@0.1.0` import
// componentize-js binds, for guests whose world imports 0.1.0 alone (a host
// serving only 0.1.0). Every other guest imports `wardlock.js`: the same API
// and the rest of 0.2, with no call renamed.
//
//   import { withLock, acquire, tryAcquire, LockError } from './wardlock1.js';
//
//   withLock('orders', { timeoutMs: 5000 }, (lock, signal) => {
//     for (const item of order) {
//       signal.throwIfAborted();          // throws 'lost' once taken away
//       charge(item, lock.fencingToken);
//     }
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
import { Guard, Kind, LockError, LockSignal, lockApi } from './wardlock-core.js';

export { Guard, Kind, LockError, LockSignal };

/**
 * `acquire(name, { mode, timeoutMs })`: waits until `name` is granted in
 * `mode` (`'exclusive'`, the default, or `'shared'`), at most `timeoutMs`
 * milliseconds (then `LockError` `'timeout'`; undefined waits until granted or
 * the instance's deadline). `tryAcquire(name, { mode })`: the lock if it can
 * be granted without waiting, else undefined. `withLock(name, options, fn)`:
 * runs `fn(guard, signal)` holding `name` and returns what it returns
 * (`signal.aborted` turns true once the lock is no longer safely held); when `fn` ends
 * normally the release is checked (a lock lost meanwhile throws `'lost'`),
 * when it throws the lock is released quietly and `fn`'s error goes on; an
 * async `fn` keeps the lock until its promise settles.
 */
export const { acquire, tryAcquire, withLock } = lockApi(rawAcquire, rawTryAcquire, Guard);
