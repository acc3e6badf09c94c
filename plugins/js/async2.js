// `async2 FIRST SECOND`: two promise chains of one guest, one awaiting an
// exclusive lock on FIRST, the other on SECOND (guest-sdk/js/wardlock2.js
// `acquireAwait`: the wait does not block the guest). Each prints
// `<task> holds <lock> token=<T>` once granted and releases at once. Awaited,
// both requests queue at once and either task may be served first
// (tests/e2e/async_guests.rs).

import { getArguments } from 'wasi:cli/environment@0.2.12';
import { acquireAwait } from '../../guest-sdk/js/wardlock2.js';

async function holdOnce(task, name) {
  const lock = await acquireAwait(name, { timeoutMs: 60_000 });
  console.log(`${task} holds ${name} token=${lock.fencingToken}`);
  lock.release();
}

export const run = {
  async run() {
    const [, first, second] = getArguments();
    if (second === undefined) throw new Error('usage: async2 FIRST SECOND');
    await Promise.all([holdOnce('a', first), holdOnce('b', second)]);
  },
};
