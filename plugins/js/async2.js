// `async2 FIRST SECOND [ABORTED GATE]`: two promise chains of one guest, one
// awaiting an exclusive lock on FIRST, the other on SECOND (guest-sdk/js/
// wardlock2.js, the default module's other name: `acquireAwait`, the wait does
// not block the guest). Each prints `<task> holds <lock> token=<T>` once
// granted and releases at once. Awaited, both requests queue at once and
// either task may be served first. With ABORTED and GATE a third chain waits
// for ABORTED with an abort signal the guest fires once the others are done
// (it prints `c gave up: <reason>`), then the guest waits for GATE and prints
// `gate passed` (tests/e2e/async_guests.rs).

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { acquireAwait } from '../../guest-sdk/js/wardlock2.js';

async function holdOnce(task, name) {
  const lock = await acquireAwait(name, { timeoutMs: 60_000 });
  console.log(`${task} holds ${name} token=${lock.fencingToken}`);
  lock.release();
}

export const run = {
  async run() {
    const [, first, second, aborted, gate] = getArguments();
    if (second === undefined) throw new Error('usage: async2 FIRST SECOND [ABORTED GATE]');
    if (aborted === undefined) {
      await Promise.all([holdOnce('a', first), holdOnce('b', second)]);
      return;
    }
    // A third task queues for ABORTED with a signal, which the guest aborts
    // once the other two are done: the wait is withdrawn and the promise
    // rejects with the signal's reason.
    const signal = { aborted: false, reason: undefined };
    const third = acquireAwait(aborted, { signal }).then(
      (lock) => {
        lock.release();
        return 'c was granted';
      },
      (e) => `c gave up: ${e instanceof Error ? e.message : e}`,
    );
    await Promise.all([holdOnce('a', first), holdOnce('b', second)]);
    signal.reason = new Error('aborted by the guest');
    signal.aborted = true;
    console.log(await third);
    // Parked at GATE until the host has seen the wait withdrawn.
    const passed = await acquireAwait(gate, { timeoutMs: 60_000 });
    passed.release();
    console.log('gate passed');
  },
};
