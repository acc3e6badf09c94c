"""Helpers shared by the Python guests: the counter file and failing with a
message (lock errors come typed, and as text, from the SDK,
guest-sdk/python/wardlock.py). Bundled into each component next to the
guest's module and the SDK (build-languages.sh copies all three).

`guest` is the name that prefixes every message (`counter: reading ...`).
"""

import sys

from componentize_py_types import Err


def read_value(guest: str, path: str) -> int:
    """The integer in `path`; a missing or empty (whitespace-only) file is 0."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return 0
    except OSError as e:
        fail(f"{guest}: reading {path}: {e}")
    if not text:
        return 0
    if not text.isdigit():
        fail(f"{guest}: {path} does not hold an integer ({text!r})")
    return int(text)


def write_value(guest: str, path: str, value: int) -> None:
    """Writes `value` to `path` (truncating), or fails."""
    try:
        with open(path, "w") as f:
            f.write(str(value))
    except OSError as e:
        fail(f"{guest}: writing {path}: {e}")


def fail(message: str):
    """Prints `message` on stderr and ends `run` with an error (exit code 1)."""
    print(message, file=sys.stderr, flush=True)
    raise Err(None)
