"""`readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT`: the readers/writers guest in Python.

Each round is, at random, a writer (with probability WRITE_PERCENT %) or a
reader:

* a writer takes LOCK_NAME exclusively, reads the value `v` in FILE (missing
  or empty = 0), writes `v + 1`, reads it back and writes `v + 2`, so an odd
  value exists only while a writer is in the middle of its work;
* a reader takes LOCK_NAME shared, reads the value twice and expects it to be
  even and unchanged.

Any odd or changing value seen under the lock is a violation of reader/writer
exclusion. At the end it prints `readers-writers: reads=R writes=W violations=X`.

Exit codes: 0 no violations, 1 violations, a lock or I/O error, or bad
arguments (the usage is printed on stderr).

Build: componentize-py -d plugins/wit -w command componentize -p plugins/python -p guest-sdk/python readers_writers -o readers-writers-python.wasm
(guest_common.py, beside this file, and the SDK guest-sdk/python/wardlock.py
are bundled with it). It stays on the world of 0.1.0 alone, so `import
wardlock` as a 0.1.0 guest sees it stays exercised:

world: command
"""

import random
import sys

import wardlock
from componentize_py_types import Err
from guest_common import fail, read_value, write_value
from wit_world import exports

GUEST = "readers-writers"
USAGE = "usage: readers-writers LOCK_NAME ROUNDS FILE WRITE_PERCENT  (WRITE_PERCENT 0..=100)"


class Run(exports.Run):
    def run(self) -> None:
        args = sys.argv[1:]
        if len(args) != 4 or not args[1].isdigit() or not args[3].isdigit() or int(args[3]) > 100:
            fail(USAGE)
        lock_name, path = args[0], args[2]
        rounds, write_percent = int(args[1]), int(args[3])
        # Seeded from WASI random when `run` starts (not at build time), so
        # concurrent instances interleave readers and writers differently.
        rng = random.Random()
        reads = writes = violations = 0
        try:
            for _ in range(rounds):
                if rng.randrange(100) < write_percent:
                    with wardlock.exclusive(lock_name):
                        violations += write_round(path)
                        writes += 1
                else:
                    with wardlock.shared(lock_name):
                        violations += read_round(path)
                        reads += 1
        except wardlock.LockError as e:
            fail(f"{GUEST}: lock {lock_name}: {e}")
        print(f"readers-writers: reads={reads} writes={writes} violations={violations}", flush=True)
        if violations:
            raise Err(None)


def write_round(path: str) -> int:
    """One writer step under the exclusive lock; returns the violations seen."""
    value = read_value(GUEST, path)
    violations = odd(value, "writer found")
    write_value(GUEST, path, value + 1)
    read_back = read_value(GUEST, path)
    violations += changed(value + 1, read_back, f"writer wrote {value + 1} but read back {read_back}")
    write_value(GUEST, path, value + 2)
    return violations


def read_round(path: str) -> int:
    """One reader step under the shared lock; returns the violations seen."""
    first = read_value(GUEST, path)
    violations = odd(first, "reader saw")
    second = read_value(GUEST, path)
    return violations + changed(first, second, f"reader saw {first} then {second}")


def odd(value: int, who: str) -> int:
    """1 (a violation, reported as `<who> odd value <value>`) if `value` is odd."""
    if value % 2:
        warn(f"{who} odd value {value}")
        return 1
    return 0


def changed(expected: int, found: int, message: str) -> int:
    """1 (a violation, reported with `message`) if `found` is not `expected`."""
    if found != expected:
        warn(message)
        return 1
    return 0


def warn(message: str) -> None:
    print(f"{GUEST}: {message}", file=sys.stderr, flush=True)

