"""Python guest SDK for `wardlock:lock@0.2.2`: the 0.1.0 API (`wardlock_core`)
plus waiting without blocking, loss notification, several locks at once,
semaphores, revocation, contenders, the guarded store and leader election.
On a world of 0.2.x
(`command2` in `plugins/wit/command.wit`) `import wardlock` gives exactly this
module's API; importing it by this name works too::

    import wardlock as locks        # or: import wardlock2 as locks

    with locks.exclusive("orders", timeout=5) as lock:
        if lock.wait_lost(timeout=0.5):          # held no more within 0.5 s?
            print("lost", lock.status)

    with locks.acquire_many([("a", locks.Mode.EXCLUSIVE), ("b", locks.Mode.SHARED)],
                            timeout=5) as (a, b):
        ...                                      # both released here

    with locks.acquire_async("orders") as pending:   # queued, not blocking
        if pending.wait(timeout=1):                   # or poll pending.subscribe()
            with pending.get() as lock:               # beside a timer, a request
                ...
    # leaving the block without taking the lock withdraws the wait

    with locks.acquire_permit("pool", permits=3, timeout=5) as permit:
        ...                                      # one of 3 permits

    locks.request_revocation("orders")           # holders see lock.revocation_requested

    with locks.exclusive("orders/42") as lock:   # the guarded store (0.2.2)
        entry = locks.get("orders/42", "count")  # Entry(value, token, revision) or None
        lock.put("count", b"7")                  # raises Lost if the lock went: nothing written

    with locks.campaign("jobs/compactor", "host-a:8080") as leadership:  # leader election (0.2.2)
        leadership.check()                       # raises Lost once another may lead
        leadership.put("last-run", b"...")       # a guarded write, as the leader
    # resigned here: the next candidate leads
    locks.leader("jobs/compactor")               # LeaderInfo(owner, value, term) or None

Pollables (`subscribe()` results) are `wasi:io/poll` resources: use them in a
`with` block (or drop them with `__exit__`) before the handle they belong to
goes. `wait(pollable, timeout)` waits on one with a timeout; `ready_first`
waits on several and a timeout at once.

Errors are `wardlock`'s typed `LockError`s; a malformed request (an empty or
duplicated `acquire_many` list, a pending lock's result taken twice) raises
`InvalidRequest`.
"""

from typing import Iterable, List, NamedTuple, Optional, Tuple

from componentize_py_types import Ok
from wardlock_core import (  # noqa: F401  (re-exported: the whole 0.1.0 API)
    Denied, Handle, InvalidName, InvalidRequest, LimitExceeded, LockError, Lost, Mode,
    OneLock, Released, Status, Timeout, Unavailable, WouldBlock, WouldDeadlock, _checked,
    _millis, _typed,
)
from wardlock_core import Guard as _Guard
from wit_world.imports import locks as _locks
from wit_world.imports import monotonic_clock as _clock
from wit_world.imports import poll as _poll
from wit_world.imports.poll import Pollable

try:  # `guarded` is 0.2.2's; a world of 0.2.0 or 0.2.1 has no such bindings
    from wit_world.imports import guarded as _guarded
except ImportError:
    _guarded = None

try:  # `election` is 0.2.2's too
    from wit_world.imports import election as _election
except ImportError:
    _election = None

__all__ = [
    "Mode", "Status", "Pollable", "Guard", "Pending", "Many", "Permit", "wait", "ready_first",
    "acquire", "exclusive", "shared", "try_acquire", "try_exclusive", "try_shared",
    "acquire_async", "acquire_many", "acquire_permit", "try_acquire_permit",
    "request_revocation", "contenders", "Contender", "Queue", "Entry", "get", "keys",
    "Leadership", "LeaderInfo", "Observer", "campaign", "leader", "observe",
    "LockError", "InvalidName", "Denied", "Timeout", "WouldDeadlock", "Lost", "Released",
    "LimitExceeded", "Unavailable", "InvalidRequest",
]


def ready_first(pollables: List[Pollable], timeout: Optional[float] = None) -> List[int]:
    """Waits until at least one of `pollables` is ready or `timeout` seconds
    passed (None: no limit); returns the indices of the ready ones (empty
    when the timeout passed first). A monotonic-clock pollable serves the
    timeout, so nothing spins."""
    if timeout is None:
        return list(_poll.poll(pollables))
    with _clock.subscribe_duration(_millis(timeout) * 1_000_000) as timer:
        ready = _poll.poll(list(pollables) + [timer])
    return [i for i in ready if i < len(pollables)]


def wait(pollable: Pollable, timeout: Optional[float] = None) -> bool:
    """Waits until `pollable` is ready (True) or `timeout` seconds passed (False)."""
    return bool(ready_first([pollable], timeout))


def _wait_on(subscribe, timeout: Optional[float]) -> bool:
    """`wait` on a fresh pollable from `subscribe()`, dropped afterwards."""
    with subscribe() as pollable:
        return wait(pollable, timeout)


class Guard(_Guard):
    """A granted lock (`wardlock.Guard`) with the 0.2.0 calls of its handle."""

    def subscribe(self) -> Pollable:
        """A pollable ready once the lock is no longer `held` (suspended,
        lost or released). Drop it (`with`) before the guard."""
        return self._handle().subscribe()

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the lock is no longer `held` (True; `status` says
        what it is now) or `timeout` seconds passed (False)."""
        return _wait_on(self._handle().subscribe, timeout)

    @property
    def revocation_requested(self) -> bool:
        """Whether someone asked this holder to give the lock up
        (`request_revocation`, or a Curator `Revoker`): releasing is up to you."""
        return self._handle().revocation_requested()

    def subscribe_revocation(self) -> Pollable:
        """A pollable ready once `revocation_requested` is true."""
        return self._handle().subscribe_revocation()

    def wait_revocation(self, timeout: Optional[float] = None) -> bool:
        """Waits until a revocation is requested (True) or `timeout` passed (False)."""
        return _wait_on(self._handle().subscribe_revocation, timeout)

    def put(self, key: str, value: bytes) -> int:
        """Writes `value` under `key` in this lock's store (0.2.2), only if
        this lock (exclusive) still stands on the lock service at the moment
        of the write; returns the write's revision. Raises `Lost` when it no
        longer does (nothing was written), `Released`, `InvalidRequest` for a
        shared guard or a bad key, `LimitExceeded` for a key over 512 bytes
        or a value over 65,536, `Unavailable`."""
        return _checked(_guarded_call("put"), self._handle(), key, bytes(value))

    def delete(self, key: str) -> bool:
        """Deletes `key` from this lock's store under the rules of `put`:
        True when there was an entry."""
        return _checked(_guarded_call("delete"), self._handle(), key)


# `acquire`, `exclusive`, `shared`, `try_acquire`, `try_exclusive`,
# `try_shared`: as in `wardlock`, returning this module's `Guard`.
acquire, exclusive, shared, try_acquire, try_exclusive, try_shared = OneLock(Guard).calls()


def _options(mode: Mode, timeout: Optional[float]) -> _locks.Options:
    return _locks.Options(mode=mode, timeout_ms=_millis(timeout))


class Pending:
    """An acquisition waiting in the lock's queue (`acquire_async`) while the
    guest does other work. Leaving its `with` block (or `cancel()`) withdraws
    the wait, or releases the lock if it was granted but not taken."""

    def __init__(self, raw: _locks.PendingLock):
        self._raw: Optional[_locks.PendingLock] = raw

    def subscribe(self) -> Pollable:
        """A pollable ready once the acquisition finished (granted or failed),
        to `poll` beside timers and other pollables. Drop it before `cancel`."""
        return self._live().subscribe()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the acquisition finished (True) or `timeout` seconds
        passed (False); the lock stays queued either way."""
        return _wait_on(self._live().subscribe, timeout)

    def get(self) -> Optional[Guard]:
        """None while waiting; then the granted lock, or the acquisition's
        error raised (`Timeout`, ...). Once only: later calls raise
        `InvalidRequest`."""
        result = self._live().get()
        if result is None:
            return None
        if isinstance(result, Ok):
            return Guard(result.value)
        raise _typed(result)

    def result(self, timeout: Optional[float] = None) -> Guard:
        """Waits at most `timeout` seconds for the lock (else `Timeout`, the
        request still queued) and returns it."""
        if not self.wait(timeout):
            raise Timeout()
        guard = self.get()
        if guard is None:
            raise Timeout()
        return guard

    def cancel(self) -> None:
        """Withdraws the wait (nothing stays queued); a no-op once cancelled."""
        raw, self._raw = self._raw, None
        if raw is not None:
            raw.__exit__(None, None, None)

    def __enter__(self) -> "Pending":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.cancel()

    def _live(self) -> _locks.PendingLock:
        if self._raw is None:
            raise Released()
        return self._raw


def acquire_async(name: str, mode: Mode = Mode.EXCLUSIVE,
                  timeout: Optional[float] = None) -> Pending:
    """Queues for `name` in `mode` and returns at once. Bad names, `denied`,
    `would-deadlock` and the handle cap raise here; a timeout (counted from
    now) or a backend failure comes from `Pending.get`."""
    return Pending(_checked(_locks.acquire_async, name, _options(mode, timeout)))


class Many(tuple):
    """The guards of one `acquire_many`, in the order requested (a tuple, so
    `with ... as (a, b):` unpacks it). Leaving the `with` block releases every
    one still held: checked when the block ended normally (the first error
    is raised after all are released), quietly when it raised."""

    def release_all(self) -> None:
        """Releases every guard still held; raises the first error (`Lost`...)
        once all were released."""
        first = None
        for guard in self:
            if guard._raw is None:
                continue
            try:
                guard.release()
            except LockError as e:
                first = first or e
        if first is not None:
            raise first

    def __enter__(self) -> "Many":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.release_all()
        else:
            for guard in self:
                guard._drop()


def acquire_many(requests: Iterable[Tuple[str, Mode]], timeout: Optional[float] = None) -> Many:
    """Takes every `(name, mode)` of `requests` as one all-or-nothing request
    within one deadline (canonical order on the host: no deadlock whatever
    order two guests list the names in). On any error nothing is held or
    queued; an empty list or a name listed twice raises `InvalidRequest`."""
    raw = [_locks.Request(name=name, mode=mode) for name, mode in requests]
    return Many(Guard(lock) for lock in _checked(_locks.acquire_many, raw, _millis(timeout)))


class Permit(Handle):
    """One permit of a counting semaphore, held until `release()` or the end
    of its `with` block. Permits are not re-entrant."""

    def __init__(self, raw: _locks.Permit):
        super().__init__(raw)
        self.permits: int = raw.permits()

    def subscribe(self) -> Pollable:
        """A pollable ready once the permit is no longer `held`."""
        return self._handle().subscribe()

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the permit is no longer `held` (True) or `timeout` passed."""
        return _wait_on(self._handle().subscribe, timeout)

    def __repr__(self) -> str:
        return f"<wardlock2.Permit {self.name!r} of {self.permits} {self.status.name.lower()}>"


def acquire_permit(name: str, permits: int, timeout: Optional[float] = None) -> Permit:
    """Waits for one of the `permits` permits of semaphore `name` (at most
    `timeout` seconds, else `Timeout`). 0 permits raises `InvalidRequest`."""
    return Permit(_checked(_locks.acquire_permit, name, permits, _millis(timeout)))


def try_acquire_permit(name: str, permits: int) -> Optional[Permit]:
    """A permit of semaphore `name` if one is free now, else None."""
    raw = _checked(_locks.try_acquire_permit, name, permits)
    return None if raw is None else Permit(raw)


def request_revocation(name: str) -> int:
    """Asks every holder of `name` to give it up; returns how many were asked."""
    return _checked(_locks.request_revocation, name)


Contender = _locks.Contender
"""One holder or waiter, as `contenders` lists it: `owner` (a label, may be
empty), `mode`, `holds` (True for a holder) and `fencing_token` (an int for a
holder where the lock service records one, else None)."""


class Queue(list):
    """`contenders`' answer: the listed `Contender`s (holders first, then
    waiters in arrival order) and `total`, how many the lock has in all."""

    def __init__(self, listed: Iterable[Contender], total: int):
        super().__init__(listed)
        self.total = total

    def holders(self) -> List[Contender]:
        """The listed holders."""
        return [c for c in self if c.holds]

    def waiters(self) -> List[Contender]:
        """The listed waiters, in arrival order."""
        return [c for c in self if not c.holds]


def contenders(name: str, limit: int = 100) -> Queue:
    """Who holds the lock `name` and who waits for it (kazoo's
    `Lock.contenders()`), from this and every other instance, host or client:
    the first `limit` contenders (the host lists at most 1024) and, as
    `.total`, how many there are. A snapshot, stale as soon as it returns.
    The name must be granted to this guest (`Denied` otherwise)."""
    if not 0 <= limit <= 0xFFFF_FFFF:
        raise ValueError(f"limit must be 0 to 4294967295, got {limit}")
    raw = _checked(_locks.contenders, name, limit)
    return Queue(raw.contenders, raw.total)


class Entry(NamedTuple):
    """One entry of a lock's store (`get`)."""

    value: bytes
    """The value as written."""
    token: int
    """The fencing token of the lock whose write made this entry."""
    revision: int
    """The lock service's revision of that write (rises with every write)."""


def _imported(module, interface: str, name: str):
    """The raw binding `name` of `module` (0.2.2's `interface`);
    `InvalidRequest` on a world without that interface."""
    if module is None:
        raise InvalidRequest(f"this guest's world does not import wardlock:lock/{interface}@0.2.2")
    return getattr(module, name)


def _guarded_call(name: str):
    """The raw `guarded` binding `name`."""
    return _imported(_guarded, "guarded", name)


def get(name: str, key: str) -> Optional[Entry]:
    """The entry `key` of lock `name`'s store (0.2.2), or None. Needs no lock
    (the name must be granted: `Denied` otherwise): without one, a snapshot
    that may be stale at once. `InvalidRequest` for a bad key."""
    raw = _checked(_guarded_call("get"), name, key)
    return None if raw is None else Entry(bytes(raw.value), raw.token, raw.revision)


def keys(name: str, prefix: str = "", limit: int = 1024) -> List[str]:
    """The keys of lock `name`'s store starting with `prefix`, sorted, at
    most `limit` (the host lists at most 1024). Errors as `get`."""
    if not 0 <= limit <= 0xFFFF_FFFF:
        raise ValueError(f"limit must be 0 to 4294967295, got {limit}")
    return list(_checked(_guarded_call("keys"), name, prefix, limit))


# ---- leader election (0.2.2) ----------------------------------------------


class LeaderInfo(NamedTuple):
    """Who leads an election (`leader`, `Observer.leader`)."""

    owner: str
    """Who leads, as the lock service records it."""
    value: str
    """The value the leader proclaimed."""
    term: int
    """The leader's term (its fencing token)."""


def _leader_info(raw) -> Optional[LeaderInfo]:
    return None if raw is None else LeaderInfo(raw.owner, raw.value, raw.term)


class Leadership(Handle):
    """This instance's leadership of an election (`campaign`), held until
    `resign()` or the end of its `with` block (which resigns: checked when
    the block ended normally, quietly when it raised). It follows a lock's
    loss rules: `status` turns `LOST` no later than another candidate can
    win, and `check()` raises why it no longer leads."""

    def __init__(self, raw):
        super().__init__(raw)
        self.term: int = raw.term()
        """Strictly greater than every earlier leader's term: a fencing token
        to hand the resources the leader writes."""

    @property
    def fencing_token(self) -> int:
        """The term."""
        return self.term

    @property
    def value(self) -> str:
        """The value this leader proclaims now."""
        return self._handle().value()

    def subscribe(self) -> Pollable:
        """A pollable ready once this no longer leads (suspended, lost or
        resigned). Drop it (`with`) before the leadership."""
        return self._handle().subscribe()

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until this no longer leads (True; `status` says what it is
        now) or `timeout` seconds passed (False)."""
        return _wait_on(self._handle().subscribe, timeout)

    def proclaim(self, value: str) -> None:
        """Replaces the proclaimed value while this leads (observers see it).
        Raises `Lost` when it no longer leads, `Released` once resigned,
        `LimitExceeded` for a value over 4096 bytes."""
        _checked(self._handle().proclaim, value)

    def put(self, key: str, value: bytes) -> int:
        """Writes `value` under `key` in the election name's guarded store,
        only while this leads; the write's revision. Errors as `Guard.put`."""
        return _checked(self._handle().put, key, bytes(value))

    def resign(self) -> None:
        """Steps down now: the next candidate leads. Raises `Lost` if the
        leadership had been lost, `Released` if resigned already."""
        raw = self._handle()
        try:
            _checked(raw.resign)
        finally:
            self._drop()

    release = resign

    def __repr__(self) -> str:
        return f"<wardlock2.Leadership {self.name!r} term {self.term} {self.status.name.lower()}>"


class Observer:
    """Follows an election's leader (`observe`); leaving its `with` block
    (or `close()`) drops it."""

    def __init__(self, raw, name: str):
        self._raw = raw
        self.name: str = name

    def leader(self) -> Optional[LeaderInfo]:
        """The leader now (None: nobody campaigns); `subscribe` compares
        against it from then on. Raises `Unavailable`."""
        return _leader_info(_checked(self._live().leader))

    def subscribe(self) -> Pollable:
        """A pollable ready once the leader (or its value or term) differs
        from the one `leader()` last returned. Drop it before the observer."""
        return self._live().subscribe()

    def wait_changed(self, timeout: Optional[float] = None) -> bool:
        """Waits until the leader differs from the one `leader()` last
        returned (True; call `leader()` for the new one) or `timeout`
        seconds passed (False)."""
        return _wait_on(self._live().subscribe, timeout)

    def close(self) -> None:
        """Drops the observer; a no-op once closed."""
        raw, self._raw = self._raw, None
        if raw is not None:
            raw.__exit__(None, None, None)

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close()

    def _live(self):
        if self._raw is None:
            raise Released()
        return self._raw


def campaign(name: str, value: str, timeout: Optional[float] = None) -> Leadership:
    """Campaigns for election `name` with `value` (0.2.2): waits until this
    instance leads (at most `timeout` seconds, else `Timeout`; None waits
    until elected). Interoperable with Curator's `LeaderLatch` on ZooKeeper
    and `etcdctl elect` on etcd. Raises `InvalidName`, `Denied` as for
    locks, `LimitExceeded`, `Unavailable`."""
    return Leadership(_checked(_imported(_election, "election", "campaign"), name, value,
                               _millis(timeout)))


def leader(name: str) -> Optional[LeaderInfo]:
    """Who leads election `name` now (None: nobody campaigns). Raises
    `InvalidName`, `Denied`, `Unavailable`."""
    return _leader_info(_checked(_imported(_election, "election", "leader"), name))


def observe(name: str) -> Observer:
    """An observer of election `name`. Raises `InvalidName`, `Denied`,
    `LimitExceeded`."""
    return Observer(_checked(_imported(_election, "election", "observe"), name), name)
