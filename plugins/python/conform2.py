"""`conform2 COMMAND...`: `lockctl2`'s command language (plugins/lockctl2)
in Python, through the 0.2.0 SDK (guest-sdk/python/wardlock2.py), so one
scenario table drives the Rust, C, Python and JavaScript guests alike
(tests/e2e/conform2.rs).

Each argument is one command; each prints one line, as lockctl2 prints it:
`acquire MODE TIMEOUT NAME`, `many TIMEOUT [MODE:NAME]...`,
`loop-many COUNT TIMEOUT FILE [MODE:NAME]...`, `release N`, `drop N`,
`status N`, `notify N ACK`, `check-until N ACK MS`, `async MODE TIMEOUT NAME`, `race P MS`, `get P`,
`drop-pending P`; permits (`permit PERMITS TIMEOUT NAME`, `try-permit
PERMITS NAME`, `release-permit Q`, `permit-status Q`,
`loop-permit COUNT PERMITS TIMEOUT HOLD_MS NAME`) and revocation
(`revoke NAME`, `revoked N`, `await-revocation N ACK MS`), `contenders NAME LIMIT`;
the guarded store (`put N KEY VALUE`, `del N KEY`, `read NAME KEY`, `keys NAME
PREFIX LIMIT`, lockctl2's guarded.rs); leader election (`campaign NAME VALUE
TIMEOUT`, `leader NAME`, `lstatus L`, `proclaim L VALUE`, `lput L KEY VALUE`,
`resign L`, `observe NAME`, `oleader O`, `owait O MS`, lockctl2's
election.rs). An error line is `err <kind>` or `err <kind>: <text>`. A malformed command prints `bad-command: ...` and exits
with code 2.

Build: plugins/build-languages.sh (componentize-py, world `command2`).
"""

import sys
import time

import wardlock2 as locks
from guest_common import read_value, write_value
from wit_world import exports

GUEST = "conform2"
MODES = {"x": locks.Mode.EXCLUSIVE, "exclusive": locks.Mode.EXCLUSIVE,
         "s": locks.Mode.SHARED, "shared": locks.Mode.SHARED}
STATUS = {locks.Status.HELD: "held", locks.Status.SUSPENDED: "suspended",
          locks.Status.LOST: "lost", locks.Status.RELEASED: "released"}


class BadCommand(Exception):
    pass


class State:
    def __init__(self):
        self.guards = []    # handle N is guards[N - 1]; None once dropped
        self.pending = []   # pending lock pN is pending[N - 1]
        self.permits = []   # permit qN is permits[N - 1]; None once dropped
        self.leaderships = []  # leadership lN is leaderships[N - 1]
        self.observers = []    # observer oN is observers[N - 1]

    def push(self, guard) -> int:
        self.guards.append(guard)
        return len(self.guards)

    def guard(self, word: str):
        return _slot(self.guards, word)

    def pend(self, word: str):
        return _slot(self.pending, word)

    def permit(self, word: str):
        return _slot(self.permits, word)


    def leadership(self, word: str):
        return _slot(self.leaderships, word, "l")

    def observer(self, word: str):
        return _slot(self.observers, word, "o")


def _slot(items, word: str, prefix: str = "hpq"):
    number = int(word.lstrip(prefix))
    if number < 1:
        raise BadCommand()
    return items[number - 1] if number <= len(items) else None


def mode_of(word: str):
    if word not in MODES:
        raise BadCommand()
    return MODES[word]


def timeout_of(word: str):
    """Seconds for the SDK from milliseconds, or None for `-`."""
    return None if word == "-" else int(word) / 1000


def requests_of(specs):
    requests = []
    for spec in specs:
        mode, _, name = spec.partition(":")
        requests.append((name, mode_of(mode)))
    return requests


def err(e: locks.LockError) -> str:
    return f"err {e}"


def granted(state: State, guard) -> str:
    return f"h{state.push(guard)} token={guard.fencing_token}"


def loop_many(count: int, timeout, path: str, requests) -> str:
    for round_ in range(count):
        try:
            with locks.acquire_many(requests, timeout):
                write_value(GUEST, path, read_value(GUEST, path) + 1)
        except locks.LockError as e:
            return f"failed at {round_}: {err(e)}"
    return f"looped {count}"


def permit_granted(state: State, permit) -> str:
    state.permits.append(permit)
    return f"q{len(state.permits)} token={permit.fencing_token}"


def loop_permit(count: int, permits: int, timeout, hold_ms: int, name: str) -> str:
    last = 0
    for round_ in range(count):
        try:
            permit = locks.acquire_permit(name, permits, timeout)
        except locks.LockError as e:
            return f"failed at {round_}: {err(e)}"
        token = permit.fencing_token
        if token <= last:
            return f"failed at {round_}: token {token} after {last}"
        last = token
        if permit.status != locks.Status.HELD:
            return f"failed at {round_}: {STATUS[permit.status]}"
        time.sleep(hold_ms / 1000)
        try:
            permit.release()
        except locks.LockError as e:
            return f"failed at {round_}: {err(e)}"
    return f"looped {count}"


def execute_permit(words, state: State):
    """The permit and revocation commands (lockctl2's permits.rs, revoke.rs);
    None when `words` is none of them."""
    match words:
        case ["permit", permits, timeout, name]:
            try:
                return permit_granted(state, locks.acquire_permit(name, int(permits), timeout_of(timeout)))
            except locks.LockError as e:
                return err(e)
        case ["try-permit", permits, name]:
            try:
                permit = locks.try_acquire_permit(name, int(permits))
            except locks.LockError as e:
                return err(e)
            return "none" if permit is None else permit_granted(state, permit)
        case ["release-permit", q]:
            permit = state.permit(q)
            if permit is None:
                return "err no-such-permit"
            try:
                permit.release()
                return "ok"
            except locks.LockError as e:
                return err(e)
        case ["permit-status", q]:
            permit = state.permit(q)
            return "err no-such-permit" if permit is None else STATUS[permit.status]
        case ["loop-permit", count, permits, timeout, hold_ms, name]:
            return loop_permit(int(count), int(permits), timeout_of(timeout), int(hold_ms), name)
        case ["revoke", name]:
            try:
                return f"asked {locks.request_revocation(name)}"
            except locks.LockError as e:
                return err(e)
        case ["contenders", name, limit]:
            try:
                queue = locks.contenders(name, int(limit))
            except locks.LockError as e:
                return err(e)
            entries = [
                f"{'held' if c.holds else 'waits'} {'x' if c.mode == locks.Mode.EXCLUSIVE else 's'} "
                f"{'-' if c.fencing_token is None else c.fencing_token} {c.owner}"
                for c in queue
            ]
            return " | ".join([str(queue.total)] + entries)
        case ["revoked", n]:
            guard = state.guard(n)
            return "err no-such-handle" if guard is None else str(guard.revocation_requested).lower()
        case ["await-revocation", n, ack, ms]:
            guard = state.guard(n)
            if guard is None:
                return "err no-such-handle"
            if not guard.wait_revocation(int(ms) / 1000):
                return "timer"
            take_ack(state, ack)
            return "revoked"
    return None


def execute_guarded(words, state: State):
    """The guarded store's commands (lockctl2's guarded.rs): `put N KEY
    VALUE` (VALUE as UTF-8), `del N KEY`, `read NAME KEY`, `keys NAME PREFIX
    LIMIT` (PREFIX `-`: none); None when `words` is none of them."""
    match words:
        case ["put", n, key, value]:
            guard = state.guard(n)
            if guard is None:
                return "err no-such-handle"
            try:
                return f"rev={guard.put(key, value.encode())}"
            except locks.LockError as e:
                return err(e)
        case ["del", n, key]:
            guard = state.guard(n)
            if guard is None:
                return "err no-such-handle"
            try:
                return str(guard.delete(key)).lower()
            except locks.LockError as e:
                return err(e)
        case ["read", name, key]:
            try:
                entry = locks.get(name, key)
            except locks.LockError as e:
                return err(e)
            if entry is None:
                return "none"
            return f"{entry.value.decode('utf-8', 'replace')} token={entry.token} rev={entry.revision}"
        case ["keys", name, prefix, limit]:
            try:
                found = locks.keys(name, "" if prefix == "-" else prefix, int(limit))
            except locks.LockError as e:
                return err(e)
            return " ".join(found + ["."])
    return None


def leader_line(leader) -> str:
    """`none` or `<VALUE> term=<T>`, as lockctl2 prints a leader."""
    return "none" if leader is None else f"{leader.value} term={leader.term}"


def leadership_call(state: State, l: str, call) -> str:
    """`call(leadership)`'s line for leadership `l`, or its error line."""
    leadership = state.leadership(l)
    if leadership is None:
        return "err no-such-leadership"
    try:
        return call(leadership)
    except locks.LockError as e:
        return err(e)


def execute_election(words, state: State):
    """Leader election's commands (lockctl2's election.rs); None when
    `words` is none of them."""
    match words:
        case ["campaign", name, value, timeout]:
            try:
                leadership = locks.campaign(name, value, timeout_of(timeout))
            except locks.LockError as e:
                return err(e)
            state.leaderships.append(leadership)
            return f"l{len(state.leaderships)} term={leadership.term}"
        case ["leader", name]:
            try:
                return leader_line(locks.leader(name))
            except locks.LockError as e:
                return err(e)
        case ["lstatus", l]:
            return leadership_call(state, l, lambda leadership: STATUS[leadership.status])
        case ["proclaim", l, value]:
            return leadership_call(state, l, lambda leadership: leadership.proclaim(value) or "ok")
        case ["lput", l, key, value]:
            return leadership_call(state, l, lambda leadership: f"rev={leadership.put(key, value.encode())}")
        case ["resign", l]:
            return leadership_call(state, l, lambda leadership: leadership.resign() or "ok")
        case ["observe", name]:
            try:
                state.observers.append(locks.observe(name))
            except locks.LockError as e:
                return err(e)
            return f"o{len(state.observers)}"
        case ["oleader", o]:
            observer = state.observer(o)
            if observer is None:
                return "err no-such-observer"
            try:
                return leader_line(observer.leader())
            except locks.LockError as e:
                return err(e)
        case ["owait", o, ms]:
            millis = int(ms)
            observer = state.observer(o)
            if observer is None:
                return "err no-such-observer"
            return "changed" if observer.wait_changed(millis / 1000) else "timer"
    return None


def take_ack(state: State, ack: str) -> None:
    """Takes the lock ACK if free, keeping it as the next handle: the host
    watches for the request, so it learns at once that the guest woke."""
    try:
        acked = locks.try_exclusive(ack)
    except locks.LockError:
        acked = None
    if acked is not None:
        state.push(acked)


def check_until(state: State, n: str, ack: str, ms: int) -> str:
    """Asks handle N's `check()` every millisecond, at most MS ms, as work
    under a lock would between its steps; once it raises, takes ACK (the
    host watches for it) and names the error."""
    guard = state.guard(n)
    if guard is None:
        return "err no-such-handle"
    deadline = time.monotonic() + ms / 1000
    while True:
        try:
            guard.check()
        except locks.LockError as e:
            noticed = e.kind
            break
        if time.monotonic() >= deadline:
            return "still held"
        time.sleep(0.001)
    take_ack(state, ack)
    return f"checked {noticed}"


def execute(words, state: State) -> str:
    line = execute_permit(words, state)
    if line is None:
        line = execute_guarded(words, state)
    if line is None:
        line = execute_election(words, state)
    if line is not None:
        return line
    match words:
        case ["acquire", mode, timeout, name]:
            try:
                return granted(state, locks.acquire(name, mode_of(mode), timeout_of(timeout)))
            except locks.LockError as e:
                return err(e)
        case ["many", timeout, *specs]:
            try:
                guards = locks.acquire_many(requests_of(specs), timeout_of(timeout))
            except locks.LockError as e:
                return err(e)
            return " ".join(f"h{state.push(guard)}" for guard in guards)
        case ["loop-many", count, timeout, path, *specs]:
            return loop_many(int(count), timeout_of(timeout), path, requests_of(specs))
        case ["release", n]:
            guard = state.guard(n)
            if guard is None:
                return "err no-such-handle"
            try:
                guard.release()
                return "ok"
            except locks.LockError as e:
                return err(e)
        case ["drop", n]:
            guard = state.guard(n)
            if guard is not None:
                guard._drop()
                state.guards[int(n.lstrip("h")) - 1] = None
            return "dropped"
        case ["status", n]:
            guard = state.guard(n)
            return "err no-such-handle" if guard is None else STATUS[guard.status]
        case ["notify", n, ack]:
            guard = state.guard(n)
            if guard is None:
                return "err no-such-handle"
            guard.wait_lost()
            line = f"woke {STATUS[guard.status]}"
            take_ack(state, ack)
            return line
        case ["check-until", n, ack, ms]:
            return check_until(state, n, ack, int(ms))
        case ["async", mode, timeout, name]:
            try:
                state.pending.append(locks.acquire_async(name, mode_of(mode), timeout_of(timeout)))
            except locks.LockError as e:
                return err(e)
            return f"p{len(state.pending)}"
        case ["race", p, ms]:
            pending = state.pend(p)
            if pending is None:
                return "err no-such-pending"
            return "pending" if pending.wait(int(ms) / 1000) else "timer"
        case ["get", p]:
            pending = state.pend(p)
            if pending is None:
                return "err no-such-pending"
            try:
                guard = pending.get()
            except locks.LockError as e:
                return err(e)
            return "none" if guard is None else granted(state, guard)
        case ["drop-pending", p]:
            pending = state.pend(p)
            if pending is not None:
                pending.cancel()
            return "dropped"
    raise BadCommand()


class Run(exports.Run):
    def run(self) -> None:
        state = State()
        for arg in sys.argv[1:]:
            try:
                line = execute(arg.split(" "), state)
            except (BadCommand, ValueError, IndexError):
                print(f"bad-command: {arg}", flush=True)
                sys.exit(2)
            print(line, flush=True)
