// `conform2 COMMAND...`: `lockctl2`'s command language (plugins/lockctl2) in
// JavaScript, through the SDK's default module (guest-sdk/js/wardlock.js), so one
// scenario table drives the Rust, C, Python and JavaScript guests alike
// (tests/e2e/conform2.rs).
//
// Each argument is one command; each prints one line, as lockctl2 prints it:
// `acquire MODE TIMEOUT NAME`, `many TIMEOUT [MODE:NAME]...`,
// `loop-many COUNT TIMEOUT FILE [MODE:NAME]...`, `release N`, `drop N`,
// `status N`, `notify N ACK`, `check-until N ACK MS`, `async MODE TIMEOUT NAME`, `race P MS`,
// `get P`, `drop-pending P`; permits (`permit PERMITS TIMEOUT NAME`,
// `try-permit PERMITS NAME`, `release-permit Q`, `permit-status Q`,
// `loop-permit COUNT PERMITS TIMEOUT HOLD_MS NAME`) and revocation
// (`revoke NAME`, `revoked N`, `await-revocation N ACK MS`), `contenders NAME LIMIT`;
// the guarded store (`put N KEY VALUE`, `del N KEY`, `read NAME KEY`, `keys
// NAME PREFIX LIMIT`, lockctl2's guarded.rs); leader election (`campaign
// NAME VALUE TIMEOUT`, `leader NAME`, `lstatus L`, `proclaim L VALUE`, `lput
// L KEY VALUE`, `resign L`, `observe NAME`, `oleader O`, `owait O MS`,
// lockctl2's election.rs). An error line is `err <kind>` or
// `err <kind>: <text>`. A malformed command prints `bad-command: ...` and
// ends the guest with an error.

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import {
  LockError,
  acquire,
  acquireAsync,
  acquireMany,
  acquirePermit,
  campaign,
  contenders,
  get,
  keys,
  leader,
  observe,
  requestRevocation,
  tryAcquire,
  tryAcquirePermit,
  withLocks,
} from '../../guest-sdk/js/wardlock.js';
import { GuestError, readValue, runMain, writeValue } from './wasi-file.js';

class BadCommand extends GuestError {}

const MODES = { x: 'exclusive', exclusive: 'exclusive', s: 'shared', shared: 'shared' };

const guards = []; // handle hN is guards[N - 1]; undefined once dropped
const pendings = []; // pending lock pN is pendings[N - 1]
const permits = []; // permit qN is permits[N - 1]
const leaderships = []; // leadership lN is leaderships[N - 1]
const observers = []; // observer oN is observers[N - 1]

function index(word, prefix = /^[hpq]/) {
  const n = Number(word.replace(prefix, ''));
  if (!Number.isInteger(n) || n < 1) throw new BadCommand();
  return n - 1;
}

function modeOf(word) {
  const mode = MODES[word];
  if (mode === undefined) throw new BadCommand();
  return mode;
}

function timeoutOf(word) {
  if (word === '-') return undefined;
  if (!/^[0-9]+$/.test(word)) throw new BadCommand();
  return Number(word);
}

function requestsOf(specs) {
  return specs.map((spec) => {
    const at = spec.indexOf(':');
    if (at < 0) throw new BadCommand();
    return [spec.slice(at + 1), modeOf(spec.slice(0, at))];
  });
}

function push(guard) {
  guards.push(guard);
  return `h${guards.length}`;
}

/** Runs `fn`, turning a `LockError` into its error line. */
function lockLine(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof LockError) return `err ${e.message}`;
    throw e;
  }
}

function loopMany(count, timeoutMs, path, requests) {
  for (let round = 0; round < count; round++) {
    const failed = lockLine(() => {
      withLocks(requests, { timeoutMs }, () => writeValue(path, readValue(path) + 1n));
    });
    if (failed !== undefined) return `failed at ${round}: ${failed}`;
  }
  return `looped ${count}`;
}

function pushPermit(permit) {
  permits.push(permit);
  return `q${permits.length} token=${permit.fencingToken}`;
}

/** `loop-permit`: COUNT rounds of take a permit, check it, hold it HOLD_MS, release it. */
function loopPermit(count, n, timeoutMs, holdMs, name) {
  let last = 0n;
  for (let round = 0; round < count; round++) {
    const failed = lockLine(() => {
      const permit = acquirePermit(name, n, { timeoutMs });
      const token = BigInt(permit.fencingToken);
      if (token <= last) return `token ${token} after ${last}`;
      last = token;
      if (permit.status !== 'held') return permit.status;
      subscribeDuration(BigInt(holdMs) * 1_000_000n).block();
      permit.release();
      return undefined;
    });
    if (failed !== undefined) return `failed at ${round}: ${failed}`;
  }
  return `looped ${count}`;
}

/** The permit and revocation commands (lockctl2's permits.rs, revoke.rs). */
function executePermit(command, args) {
  switch (`${command}/${args.length}`) {
    case 'permit/3': {
      const [n, timeout, name] = args;
      return lockLine(() => pushPermit(acquirePermit(name, Number(timeoutOf(n)), { timeoutMs: timeoutOf(timeout) })));
    }
    case 'try-permit/2':
      return lockLine(() => {
        const permit = tryAcquirePermit(args[1], Number(timeoutOf(args[0])));
        return permit === undefined ? 'none' : pushPermit(permit);
      });
    case 'release-permit/1': {
      const permit = permits[index(args[0])];
      if (permit === undefined) return 'err no-such-permit';
      return lockLine(() => {
        permit.release();
        return 'ok';
      });
    }
    case 'permit-status/1':
      return permits[index(args[0])]?.status ?? 'err no-such-permit';
    case 'loop-permit/5': {
      const [count, n, timeout, holdMs, name] = args;
      return loopPermit(Number(timeoutOf(count)), Number(timeoutOf(n)), timeoutOf(timeout), Number(timeoutOf(holdMs)), name);
    }
    case 'revoke/1':
      return lockLine(() => `asked ${requestRevocation(args[0])}`);
    case 'contenders/2':
      return lockLine(() => {
        const queue = contenders(args[0], { limit: Number(args[1]) });
        const entries = queue.contenders.map(
          (c) => `${c.holds ? 'held' : 'waits'} ${c.mode === 'exclusive' ? 'x' : 's'} ${c.fencingToken ?? '-'} ${c.owner}`,
        );
        return [String(queue.total), ...entries].join(' | ');
      });
    case 'revoked/1': {
      const guard = guards[index(args[0])];
      return guard === undefined ? 'err no-such-handle' : String(guard.revocationRequested);
    }
    case 'await-revocation/3': {
      const [n, ack, ms] = args;
      const guard = guards[index(n)];
      if (guard === undefined) return 'err no-such-handle';
      if (!guard.waitRevocation(timeoutOf(ms))) return 'timer';
      // Tell the host at once: it watches for ACK being taken.
      let acked;
      try {
        acked = tryAcquire(ack);
      } catch {
        acked = undefined;
      }
      if (acked !== undefined) push(acked);
      return 'revoked';
    }
  }
  return undefined;
}

/** The guarded store's commands (lockctl2's guarded.rs). */
function executeGuarded(command, args) {
  switch (`${command}/${args.length}`) {
    case 'put/3': {
      const [n, key, value] = args;
      const guard = guards[index(n)];
      if (guard === undefined) return 'err no-such-handle';
      return lockLine(() => `rev=${guard.put(key, value)}`);
    }
    case 'del/2': {
      const guard = guards[index(args[0])];
      if (guard === undefined) return 'err no-such-handle';
      return lockLine(() => String(guard.delete(args[1])));
    }
    case 'read/2':
      return lockLine(() => {
        const entry = get(args[0], args[1]);
        return entry === undefined ? 'none' : `${entry.text()} token=${entry.token} rev=${entry.revision}`;
      });
    case 'keys/3': {
      const [name, prefix, limit] = args;
      return lockLine(() => [...keys(name, prefix === '-' ? '' : prefix, Number(timeoutOf(limit))), '.'].join(' '));
    }
  }
  return undefined;
}

/** `none` or `<VALUE> term=<T>`, as lockctl2 prints a leader. */
function leaderLine(info) {
  return info === undefined ? 'none' : `${info.value} term=${info.term}`;
}

/** `fn(leadership)`'s line for leadership `word`, or its error line. */
function withLeadershipOf(word, fn) {
  const leadership = leaderships[index(word, /^l/)];
  if (leadership === undefined) return 'err no-such-leadership';
  return lockLine(() => fn(leadership));
}

/** Leader election's commands (lockctl2's election.rs). */
function executeElection(command, args) {
  switch (`${command}/${args.length}`) {
    case 'campaign/3': {
      const [name, value, timeout] = args;
      const timeoutMs = timeoutOf(timeout);
      return lockLine(() => {
        const leadership = campaign(name, value, { timeoutMs });
        leaderships.push(leadership);
        return `l${leaderships.length} term=${leadership.term}`;
      });
    }
    case 'leader/1':
      return lockLine(() => leaderLine(leader(args[0])));
    case 'lstatus/1':
      return withLeadershipOf(args[0], (leadership) => leadership.status);
    case 'proclaim/2':
      return withLeadershipOf(args[0], (leadership) => {
        leadership.proclaim(args[1]);
        return 'ok';
      });
    case 'lput/3':
      return withLeadershipOf(args[0], (leadership) => `rev=${leadership.put(args[1], args[2])}`);
    case 'resign/1':
      return withLeadershipOf(args[0], (leadership) => {
        leadership.resign();
        return 'ok';
      });
    case 'observe/1':
      return lockLine(() => {
        observers.push(observe(args[0]));
        return `o${observers.length}`;
      });
    case 'oleader/1': {
      const observer = observers[index(args[0], /^o/)];
      if (observer === undefined) return 'err no-such-observer';
      return lockLine(() => leaderLine(observer.leader()));
    }
    case 'owait/2': {
      const timeoutMs = timeoutOf(args[1]);
      if (timeoutMs === undefined) throw new BadCommand();
      const observer = observers[index(args[0], /^o/)];
      if (observer === undefined) return 'err no-such-observer';
      return observer.waitChanged(timeoutMs) ? 'changed' : 'timer';
    }
  }
  return undefined;
}

function execute([command, ...args]) {
  const line = executePermit(command, args) ?? executeGuarded(command, args) ?? executeElection(command, args);
  if (line !== undefined) return line;
  switch (`${command}/${args.length}`) {
    case 'acquire/3': {
      const [mode, timeout, name] = args;
      return lockLine(() => {
        const guard = acquire(name, { mode: modeOf(mode), timeoutMs: timeoutOf(timeout) });
        return `${push(guard)} token=${guard.fencingToken}`;
      });
    }
    case 'release/1': {
      const guard = guards[index(args[0])];
      if (guard === undefined) return 'err no-such-handle';
      return lockLine(() => {
        guard.release();
        return 'ok';
      });
    }
    case 'drop/1': {
      const at = index(args[0]);
      guards[at]?.[Symbol.dispose]();
      guards[at] = undefined;
      return 'dropped';
    }
    case 'status/1':
      return guards[index(args[0])]?.status ?? 'err no-such-handle';
    case 'notify/2': {
      const guard = guards[index(args[0])];
      if (guard === undefined) return 'err no-such-handle';
      guard.waitLost();
      // Tell the host at once: it watches for ACK being taken.
      let acked;
      try {
        acked = tryAcquire(args[1]);
      } catch {
        acked = undefined;
      }
      const line = `woke ${guard.status}`;
      if (acked !== undefined) push(acked);
      return line;
    }
    case 'check-until/3': {
      // Reads the guard's signal every millisecond, at most MS ms, as work
      // under a lock would between its steps; once aborted, takes ACK (the
      // host watches for it) and names the reason.
      const guard = guards[index(args[0])];
      if (guard === undefined) return 'err no-such-handle';
      const signal = guard.signal;
      const deadline = Date.now() + Number(args[2]);
      while (!signal.aborted) {
        if (Date.now() >= deadline) return 'still held';
        subscribeDuration(1_000_000n).block();
      }
      const kind = signal.reason.kind;
      let acked;
      try {
        acked = tryAcquire(args[1]);
      } catch {
        acked = undefined;
      }
      if (acked !== undefined) push(acked);
      return `checked ${kind}`;
    }
    case 'async/3': {
      const [mode, timeout, name] = args;
      return lockLine(() => {
        pendings.push(acquireAsync(name, { mode: modeOf(mode), timeoutMs: timeoutOf(timeout) }));
        return `p${pendings.length}`;
      });
    }
    case 'race/2': {
      const pending = pendings[index(args[0])];
      if (pending === undefined) return 'err no-such-pending';
      return pending.wait(timeoutOf(args[1])) ? 'pending' : 'timer';
    }
    case 'get/1': {
      const pending = pendings[index(args[0])];
      if (pending === undefined) return 'err no-such-pending';
      return lockLine(() => {
        const guard = pending.get();
        return guard === undefined ? 'none' : `${push(guard)} token=${guard.fencingToken}`;
      });
    }
    case 'drop-pending/1':
      pendings[index(args[0])]?.[Symbol.dispose]();
      return 'dropped';
  }
  if (command === 'many' && args.length >= 1) {
    const requests = requestsOf(args.slice(1));
    const timeoutMs = timeoutOf(args[0]);
    return lockLine(() => acquireMany(requests, { timeoutMs }).map(push).join(' '));
  }
  if (command === 'loop-many' && args.length >= 3) {
    const [count, timeout, path, ...specs] = args;
    return loopMany(Number(timeoutOf(count)), timeoutOf(timeout), path, requestsOf(specs));
  }
  throw new BadCommand();
}

function main() {
  for (const arg of getArguments().slice(1)) {
    let line;
    try {
      line = execute(arg.split(' '));
    } catch (e) {
      if (e instanceof BadCommand) console.log(`bad-command: ${arg}`);
      throw e;
    }
    console.log(line);
  }
}

export const run = {
  run() {
    runMain('conform2', main);
  },
};
