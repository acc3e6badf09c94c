"""The core of wardlock's Python guest SDK: the `wardlock:lock@0.1.0` API, over
the bindings componentize-py generates (`wit_world.imports.locks`) of either
version: it calls only what both have. Guests import `wardlock`, which is this
API on a world of 0.1.0 and the whole 0.2 API (`wardlock2`, built on this
module) on a world of 0.2.x.

Leaving a `with` block releases the lock. When the block ended normally the
release is checked (a lock lost meanwhile raises `Lost`, so the work done under
it is not silently trusted); when the block raised, the lock is released
quietly and the block's exception goes on unchanged. A guard that is never
released is released by the host when the instance ends, whatever way it ends.

Errors are `LockError` subclasses, one per case of the WIT `error` variant
(`InvalidName`, `Denied`, `Timeout`, `WouldDeadlock`, `Lost`, `Released`,
`LimitExceeded`, `Unavailable`; `WouldBlock` is never produced by the host;
`InvalidRequest` is 0.2.0's).
Each has `kind` (the WIT case name, `"invalid-name"`) and `detail` (the host's
text, or None); `str(error)` is `kind` or `kind: detail`.
"""

import math
from typing import Optional

from componentize_py_types import Err
from wit_world.imports import locks as _locks
from wit_world.imports import types as _types
from wit_world.imports.types import Mode, Status

__all__ = [
    "Mode", "Status", "Guard", "acquire", "exclusive", "shared", "try_acquire",
    "try_exclusive", "try_shared", "LockError", "InvalidName", "Denied", "Timeout",
    "WouldBlock", "WouldDeadlock", "Lost", "Released", "LimitExceeded", "Unavailable",
    "InvalidRequest",
]


class LockError(Exception):
    """A lock call failed; subclasses name the case. Nothing is left half-acquired."""

    kind = "lock-error"

    def __init__(self, detail: Optional[str] = None):
        super().__init__(f"{self.kind}: {detail}" if detail else self.kind)
        self.detail = detail


class InvalidName(LockError):
    """The lock name is not acceptable; `detail` says why."""
    kind = "invalid-name"


class Denied(LockError):
    """This component is not granted the name; `detail` is the host's sentence."""
    kind = "denied"


class Timeout(LockError, TimeoutError):
    """The timeout passed before the lock was granted (also a `TimeoutError`,
    so `except TimeoutError` catches it as Python code expects)."""
    kind = "timeout"


class WouldBlock(LockError):
    """Never produced by the wardlock host (`try_*` returns None instead)."""
    kind = "would-block"


class WouldDeadlock(LockError):
    """Exclusive was asked for a name this instance holds only shared."""
    kind = "would-deadlock"


class Lost(LockError):
    """The lock was lost (backend session expired): the guard is useless."""
    kind = "lost"


class Released(LockError):
    """The guard was already released."""
    kind = "released"


class LimitExceeded(LockError):
    """A per-instance limit was reached; `detail` names it."""
    kind = "limit-exceeded"


class Unavailable(LockError):
    """The lock service cannot be reached or failed; `detail` says how."""
    kind = "unavailable"


class InvalidRequest(LockError):
    """(0.2.0) The request as a whole is malformed (an empty or duplicated
    `acquire_many` list, a pending lock's result taken twice); `detail` says how."""
    kind = "invalid-request"


# The generated `Error_<Case>` class name -> the SDK's exception class (the
# cases of both WIT versions: 0.1.0 has `WouldBlock`, 0.2.0 `InvalidRequest`).
_ERRORS = {
    "Error_" + cls.__name__: cls
    for cls in (InvalidName, Denied, Timeout, WouldBlock, WouldDeadlock, Lost, Released,
                LimitExceeded, Unavailable, InvalidRequest)
}


def _typed(err: Err) -> LockError:
    """The `LockError` for a raw `Err(wit_world.imports.types.Error_*)`."""
    case = err.value
    return _ERRORS[type(case).__name__](getattr(case, "value", None))


def _checked(call, *args):
    """`call(*args)`, a raw binding, with its `Err` raised as the typed `LockError`."""
    try:
        return call(*args)
    except Err as e:
        raise _typed(e) from None


class Handle:
    """A held grant (a lock, or a 0.2.0 permit) over a raw resource, held
    until `release()` or the end of its `with` block."""

    def __init__(self, raw):
        self._raw = raw
        # Read once: the name never changes, and a dropped handle cannot be
        # asked any more.
        self.name: str = raw.name()

    @property
    def fencing_token(self) -> int:
        """Strictly greater for every later conflicting grant of this name:
        hand it to the resource you protect so it can refuse stale writers."""
        return self._handle().fencing_token()

    @property
    def status(self) -> Status:
        """What the guard guarantees now (`Status.HELD`, `SUSPENDED`, `LOST`,
        `RELEASED`); check it before steps that must not run unprotected."""
        if self._raw is None:
            return Status.RELEASED
        return self._raw.status()

    def check(self) -> None:
        """Returns while the lock is safely held; otherwise raises why not, so
        a block of work stops at its next step instead of learning of a loss
        at the end: `Lost` (taken away: another holder may own it),
        `Unavailable` (suspended: the host lost contact with the lock service),
        `Released`."""
        status = self.status
        if status == Status.HELD:
            return
        if status == Status.SUSPENDED:
            raise Unavailable("the lock is suspended: the host lost contact with the lock service")
        if status == Status.LOST:
            raise Lost()
        raise Released()

    def release(self) -> None:
        """Releases the lock now. Raises `Lost` if it had been lost meanwhile
        and `Released` if this guard was released already."""
        raw = self._handle()
        try:
            _checked(raw.release)
        finally:
            self._drop()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if self._raw is None:
            return
        if exc_type is None:
            self.release()
        else:
            # Dropping the handle releases it without an answer: the block's
            # own exception is the one worth seeing.
            self._drop()

    def _handle(self):
        if self._raw is None:
            raise Released()
        return self._raw

    def _drop(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            raw.__exit__(None, None, None)


class Guard(Handle):
    """A granted lock, held until `release()` or the end of its `with` block."""

    def __init__(self, raw: _locks.Lock):
        super().__init__(raw)
        self.mode: Mode = raw.mode()

    def __repr__(self) -> str:
        return f"<wardlock.Guard {self.name!r} {self.mode.name.lower()} {self.status.name.lower()}>"


def _millis(timeout: Optional[float]) -> Optional[int]:
    """Seconds to the host's whole milliseconds, rounded up (a non-zero
    timeout never becomes "fail at once"); None waits for ever."""
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError(f"timeout must not be negative: {timeout}")
    return math.ceil(timeout * 1000)


class OneLock:
    """The one-lock calls, wrapping each granted lock in `guard` (`Guard`
    here; `wardlock2` binds them to its 0.2.0 `Guard`). The module exports
    them bound: `wardlock.acquire`, `wardlock.exclusive`, ..."""

    def __init__(self, guard):
        self._guard = guard

    def acquire(self, name: str, mode: Mode = Mode.EXCLUSIVE, timeout: Optional[float] = None):
        """Waits until `name` is granted in `mode` (at most `timeout` seconds, else
        `Timeout`; None waits until granted or the instance's deadline)."""
        options = _locks.Options(mode=mode, timeout_ms=_millis(timeout))
        return self._guard(_checked(_locks.acquire, name, options))

    def exclusive(self, name: str, timeout: Optional[float] = None):
        """`name` as a write lock: no other holder while the guard lives."""
        return self.acquire(name, Mode.EXCLUSIVE, timeout)

    def shared(self, name: str, timeout: Optional[float] = None):
        """`name` as a read lock: other shared holders, no exclusive one."""
        return self.acquire(name, Mode.SHARED, timeout)

    def try_acquire(self, name: str, mode: Mode = Mode.EXCLUSIVE):
        """`name` in `mode` if it can be granted without waiting, else None."""
        raw = _checked(_locks.try_acquire, name, mode)
        return None if raw is None else self._guard(raw)

    def try_exclusive(self, name: str):
        """`try_acquire(name, Mode.EXCLUSIVE)`."""
        return self.try_acquire(name, Mode.EXCLUSIVE)

    def try_shared(self, name: str):
        """`try_acquire(name, Mode.SHARED)`."""
        return self.try_acquire(name, Mode.SHARED)

    def calls(self):
        """The six calls, bound: acquire, exclusive, shared, try_acquire,
        try_exclusive, try_shared."""
        return (self.acquire, self.exclusive, self.shared, self.try_acquire,
                self.try_exclusive, self.try_shared)


acquire, exclusive, shared, try_acquire, try_exclusive, try_shared = OneLock(Guard).calls()


# `_types` is imported so the error classes above stay tied to the WIT cases
# they mirror: a case added there without one here fails at build time.
assert {
    name for name in dir(_types) if name.startswith("Error_")
} <= set(_ERRORS), "wardlock.py: a WIT error case has no LockError subclass"
