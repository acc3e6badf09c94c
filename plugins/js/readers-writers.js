// `readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT`: the readers/writers
// guest in JavaScript.
//
// Each round is, at random, a writer (with probability WRITE_PERCENT %) or a
// reader:
//   - a writer takes LOCK_NAME exclusively, reads the value `v` in FILE
//     (missing or empty = 0), writes `v + 1`, reads it back and writes `v + 2`,
//     so an odd value exists only while a writer is in the middle of its work;
//   - a reader takes LOCK_NAME shared, reads the value twice and expects it to
//     be even and unchanged.
// Any odd or changing value seen under the lock is a violation of
// reader/writer exclusion. At the end it prints
// `readers-writers: reads=R writes=W violations=X`.
//
// Exit codes: 0 no violations, 1 violations, a lock or I/O error, or bad
// arguments (the usage is printed on stderr).

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { LockError, withLock } from '../../guest-sdk/js/wardlock.js';
import { GuestError, UsageError, readValue, runMain, writeValue } from './wasi-file.js';

const USAGE = 'usage: readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT  (WRITE_PERCENT 0..=100)';

function warn(message) {
  console.error(`readers-writers: ${message}`);
}

/** One writer step under the exclusive lock; returns the violations seen. */
function writeRound(path) {
  let violations = 0;
  const value = readValue(path);
  if (value % 2n !== 0n) {
    warn(`writer found odd value ${value}`);
    violations++;
  }
  writeValue(path, value + 1n);
  const readBack = readValue(path);
  if (readBack !== value + 1n) {
    warn(`writer wrote ${value + 1n} but read back ${readBack}`);
    violations++;
  }
  writeValue(path, value + 2n);
  return violations;
}

/** One reader step under the shared lock; returns the violations seen. */
function readRound(path) {
  let violations = 0;
  const first = readValue(path);
  if (first % 2n !== 0n) {
    warn(`reader saw odd value ${first}`);
    violations++;
  }
  const second = readValue(path);
  if (second !== first) {
    warn(`reader saw ${first} then ${second}`);
    violations++;
  }
  return violations;
}

/** Runs `step` under `lockName` held in `mode`; lock errors name the lock. */
function locked(lockName, mode, step) {
  try {
    return withLock(lockName, { mode }, step);
  } catch (e) {
    if (e instanceof LockError) throw new GuestError(`lock ${lockName}: ${e.message}`);
    throw e;
  }
}

function main() {
  const args = getArguments().slice(1);
  const number = /^[0-9]+$/;
  if (args.length !== 4 || !number.test(args[1]) || !number.test(args[3]) || Number(args[3]) > 100) {
    throw new UsageError(USAGE);
  }
  const [lockName, , path] = args;
  const rounds = Number(args[1]);
  const writePercent = Number(args[3]);
  // WASI random, drawn at run time, so concurrent instances interleave readers
  // and writers differently.
  const random = new Uint32Array(1);
  let reads = 0;
  let writes = 0;
  let violations = 0;
  for (let round = 0; round < rounds; round++) {
    crypto.getRandomValues(random);
    if (random[0] % 100 < writePercent) {
      violations += locked(lockName, 'exclusive', () => writeRound(path));
      writes++;
    } else {
      violations += locked(lockName, 'shared', () => readRound(path));
      reads++;
    }
  }
  console.log(`readers-writers: reads=${reads} writes=${writes} violations=${violations}`);
  if (violations > 0) throw new GuestError(`${violations} violation(s)`);
}

export const run = {
  run() {
    runMain('readers-writers', main);
  },
};
