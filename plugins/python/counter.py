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

And one that tests the SDK's scoped release (FILE is not touched either):

* `error`: take LOCK_NAME exclusively in a `with` block and, inside it, ask
  for an invalid name; the `wardlock.InvalidName` raised ends the block, which
  releases LOCK_NAME. Caught outside: print `caught invalid-name`, then take
  LOCK_NAME again (waiting for whoever took it meanwhile), print `reacquired`.

Exit codes: 0 success, 1 lock or I/O error or bad arguments (the usage is
printed on stderr).

Build: componentize-py -d plugins/wit -w command2 componentize -p plugins/python -p guest-sdk/python counter -o counter-python.wasm
(guest_common.py, beside this file, and the SDK guest-sdk/python/wardlock.py
are bundled with it).
"""

import os
import sys

import wardlock
from guest_common import fail, read_value, write_value
from wit_world import exports

GUEST = "counter"

USAGE = "usage: counter LOCK_NAME ITERATIONS|trap|leak|error FILE  (ITERATIONS >= 1)"

# Guards that must outlive `run` (ITERATIONS = `leak`) or last until the trap.
LEAKED = []


class Run(exports.Run):
    def run(self) -> None:
        args = sys.argv[1:]
        if len(args) != 3:
            fail(USAGE)
        lock_name, iterations, path = args
        if iterations == "trap":
            # Referenced, so the guard is not collected (and the lock
            # released) before the trap.
            LEAKED.append(hold(lock_name))
            print("holding", flush=True)
            os.abort()
        if iterations == "leak":
            LEAKED.append(hold(lock_name))
            print("leaked", flush=True)
            return
        if iterations == "error":
            error_inside(lock_name)
            return
        count = parse_positive(iterations)
        if count is None:
            fail(USAGE)
        value = token = 0
        for _ in range(count):
            lock = hold(lock_name)
            try:
                # Leaving the block releases the lock, and raises if it was
                # lost meanwhile.
                with lock:
                    value = read_value(GUEST, path) + 1
                    write_value(GUEST, path, value)
                    token = lock.fencing_token
            except wardlock.LockError as e:
                fail(f"counter: releasing {lock_name}: {e}")
        print(f"counter: {lock_name} +{count} (last value {value}, last fencing token {token})")


def hold(lock_name: str) -> wardlock.Guard:
    """Takes `lock_name` exclusively, or fails."""
    try:
        return wardlock.exclusive(lock_name)
    except wardlock.LockError as e:
        fail(f"counter: acquiring {lock_name}: {e}")


def error_inside(lock_name: str) -> None:
    """ITERATIONS = `error`: a typed error raised inside the `with` block
    releases the lock on its way out."""
    try:
        with hold(lock_name):
            wardlock.exclusive(f"{lock_name}//")
    except wardlock.InvalidName as e:
        print(f"caught {e.kind}", flush=True)
    with hold(lock_name):
        print("reacquired", flush=True)


def parse_positive(text: str):
    """A positive decimal integer, or None."""
    if not text.isdigit():
        return None
    number = int(text)
    return number if number > 0 else None
