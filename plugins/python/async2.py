"""`async2 FIRST SECOND`: two asyncio tasks of one guest, one awaiting an
exclusive lock on FIRST, the other on SECOND, on wardlock_asyncio's loop over
`wasi:io/poll` (guest-sdk/python/wardlock_asyncio.py). Each prints
`<task> holds <lock> token=<T>` once granted and releases on leaving its
`async with`. Awaited, both requests queue at once and either task may be
served first (tests/e2e/async_guests.rs).

Build: plugins/build-languages.sh (componentize-py, world `command2`).
"""

import asyncio
import sys

import wardlock_asyncio as alocks
from wit_world import exports


async def hold_once(task: str, name: str) -> None:
    async with alocks.exclusive(name, timeout=60) as lock:
        print(f"{task} holds {name} token={lock.fencing_token}", flush=True)


async def main(first: str, second: str) -> None:
    await asyncio.gather(hold_once("a", first), hold_once("b", second))


class Run(exports.Run):
    def run(self) -> None:
        if len(sys.argv) != 3:
            print("usage: async2 FIRST SECOND", file=sys.stderr)
            sys.exit(2)
        alocks.run(main(sys.argv[1], sys.argv[2]))
