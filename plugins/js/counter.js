// `counter LOCK_NAME ITERATIONS FILE`: the counter guest in JavaScript.
//
// ITERATIONS times: take LOCK_NAME exclusively, read the integer stored in
// FILE (a missing or empty file counts as 0), write it back incremented and
// release the lock. Run several instances at once: if the lock provides mutual
// exclusion, FILE ends up holding the sum of all their ITERATIONS.
//
// Two special values of ITERATIONS test what the host does with a guest that
// ends while holding the lock (FILE is not touched):
//   trap  take LOCK_NAME exclusively, print `holding`, then trap;
//   leak  take LOCK_NAME exclusively, keep the handle referenced from a module
//         global (so it is never dropped), print `leaked` and return success.
// And one that tests the SDK's scoped release (FILE is not touched either):
//   error take LOCK_NAME exclusively with `withLock` and, inside it, ask for
//         an invalid name; the `LockError` thrown ends `withLock`, which
//         releases LOCK_NAME. Caught outside: print `caught invalid-name`, then
//         take LOCK_NAME again (waiting for whoever took it meanwhile) and
//         print `reacquired`.
//
// Exit codes: 0 success, 1 lock or I/O error or bad arguments (the usage is
// printed on stderr).

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { acquire as rawAcquire } from 'wardlock:lock/locks@0.1.0';
import { LockError, acquire, withLock } from '../../guest-sdk/js/wardlock1.js';
import { GuestError, UsageError, readValue, runMain, writeValue } from './wasi-file.js';

const USAGE = 'usage: counter LOCK_NAME ITERATIONS|trap|leak|error FILE  (ITERATIONS >= 1)';

// Handles that must outlive `run` (ITERATIONS = `leak`).
const leaked = [];

function hold(lockName) {
  try {
    return acquire(lockName);
  } catch (e) {
    throw new GuestError(`acquiring ${lockName}: ${e.message}`);
  }
}

/** ITERATIONS = `error`: an error thrown inside `withLock` releases the lock
 * on its way out. */
function errorInside(lockName) {
  try {
    withLock(lockName, {}, () => acquire(`${lockName}//`));
  } catch (e) {
    if (!(e instanceof LockError) || e.kind !== 'invalid-name') throw e;
    console.log(`caught ${e.kind}`);
  }
  withLock(lockName, {}, () => console.log('reacquired'));
}

function main() {
  const args = getArguments().slice(1);
  if (args.length !== 3) throw new UsageError(USAGE);
  const [lockName, iterations, path] = args;

  if (iterations === 'trap') {
    leaked.push(hold(lockName));
    console.log('holding');
    // JavaScript cannot trap by itself. Dropping a resource handle that is
    // already gone is a trap under the component model's rules, so drop a
    // second (re-entrant) raw handle on the lock twice (the SDK's guards
    // ignore a second disposal); the first handle keeps the lock held until
    // the trap.
    const extra = rawAcquire(lockName, { mode: 'exclusive' });
    extra[Symbol.dispose]();
    extra[Symbol.dispose]();
    throw new GuestError('dropping a handle twice did not trap');
  }
  if (iterations === 'leak') {
    leaked.push(hold(lockName));
    console.log('leaked');
    return;
  }
  if (iterations === 'error') {
    errorInside(lockName);
    return;
  }

  if (!/^[0-9]+$/.test(iterations) || BigInt(iterations) === 0n) throw new UsageError(USAGE);
  const count = BigInt(iterations);
  let value = 0n;
  let token = 0n;
  for (let i = 0n; i < count; i++) {
    // Disposed (released, if still held) however the iteration ends.
    using lock = hold(lockName);
    value = readValue(path) + 1n;
    writeValue(path, value);
    token = lock.fencingToken;
    try {
      lock.release();
    } catch (e) {
      throw new GuestError(`releasing ${lockName}: ${e.message}`);
    }
  }
  console.log(`counter: ${lockName} +${count} (last value ${value}, last fencing token ${token})`);
}

export const run = {
  run() {
    runMain('counter', main);
  },
};
