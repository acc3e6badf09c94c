"""`counter LOCK_NAME ITERATIONS FILE`: the counter guest in Python.

ITERATIONS times: take LOCK_NAME exclusively, read the integer stored in FILE
(a missing or empty file counts as 0), write it back incremented and release
the lock. Run several instances at once: if the lock provides mutual
exclusion, FILE ends up holding the sum of all their ITERATIONS.

Two special values of ITERATIONS test what the host does with a guest that
ends while holding the lock (FILE is not touched):

* `trap`: take LOCK_NAME exclusively, print `holding`, then trap.
* `leak`: take LOCK_NAME exclusively, keep the handle referenced from a
  module global (so it is never dropped), print `leaked` and return success.

Exit codes: 0 success, 1 lock or I/O error or bad arguments (the usage is
printed on stderr).

Build: componentize-py -d plugins/wit -w command componentize -p plugins/python counter -o counter-python.wasm
(guest_common.py, beside this file, is bundled with it).
"""

import os
import sys

from componentize_py_types import Err
from guest_common import describe, fail, read_value, write_value
from wit_world import exports
from wit_world.imports import locks
from wit_world.imports.types import Mode

GUEST = "counter"

USAGE = "usage: counter LOCK_NAME ITERATIONS|trap|leak FILE  (ITERATIONS >= 1)"

# Handles that must outlive `run` (ITERATIONS = `leak`).
LEAKED = []


class Run(exports.Run):
    def run(self) -> None:
        args = sys.argv[1:]
        if len(args) != 3:
            fail(USAGE)
        lock_name, iterations, path = args
        if iterations == "trap":
            hold(lock_name)
            print("holding", flush=True)
            os.abort()
        if iterations == "leak":
            LEAKED.append(hold(lock_name))
            print("leaked", flush=True)
            return
        count = parse_positive(iterations)
        if count is None:
            fail(USAGE)
        value = token = 0
        for _ in range(count):
            # Leaving the block drops the handle (after `release`, a no-op).
            with hold(lock_name) as lock:
                value = read_value(GUEST, path) + 1
                write_value(GUEST, path, value)
                token = lock.fencing_token()
                try:
                    lock.release()
                except Err as e:
                    fail(f"counter: releasing {lock_name}: {describe(e.value)}")
        print(f"counter: {lock_name} +{count} (last value {value}, last fencing token {token})")


def hold(lock_name: str) -> locks.Lock:
    """Takes `lock_name` exclusively, or fails."""
    try:
        return locks.acquire(lock_name, locks.Options(mode=Mode.EXCLUSIVE, timeout_ms=None))
    except Err as e:
        fail(f"counter: acquiring {lock_name}: {describe(e.value)}")


def parse_positive(text: str):
    """A positive decimal integer, or None."""
    if not text.isdigit():
        return None
    number = int(text)
    return number if number > 0 else None
