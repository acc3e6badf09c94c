"""Helpers shared by the Python guests: the counter file, lock errors as text,
and failing with a message. Bundled into each component next to the guest's
module (build-languages.sh copies both).

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


def describe(error) -> str:
    """`timeout`, `invalid-name: <why>`, ... for a `wardlock:lock/types.error`."""
    kind = type(error).__name__.removeprefix("Error_")
    kind = "".join("-" + c.lower() if c.isupper() else c for c in kind).lstrip("-")
    detail = getattr(error, "value", None)
    return f"{kind}: {detail}" if detail else kind


def fail(message: str):
    """Prints `message` on stderr and ends `run` with an error (exit code 1)."""
    print(message, file=sys.stderr, flush=True)
    raise Err(None)
