"""asyncio for wardlock guests: an event loop over `wasi:io/poll`, so a task
awaiting a lock lets the guest's other tasks run::

    import asyncio
    import wardlock_asyncio as alocks

    async def main():
        async with alocks.exclusive("orders", timeout=5) as lock:
            ...                                   # other tasks ran while we queued
        await asyncio.gather(job("a"), job("b"))  # each awaits its own lock

    alocks.run(main())

`run(coro)` runs `coro` on a `PollLoop`: ready callbacks first, then one
`wasi:io/poll.poll` over every pollable a task awaits (`ready(pollable)`) and
the next timer (`asyncio.sleep` works). The loop implements what asyncio's
tasks, futures, `gather`, `wait_for` and `sleep` need; it has no sockets,
subprocesses or signals (WASI guests have none of those through asyncio).

Lock calls are `wardlock2`'s; this module adds `await`-able forms:
`acquire`/`exclusive`/`shared` (async context managers yielding a `Guard`)
and `ready(pollable)` for any `subscribe()` result, e.g.
`await alocks.ready(lock.subscribe())` to wait for a loss, and
`changed(observer)` for an election's next leader. (Semaphore permits and
campaigns have no queued form in the WIT yet: `wardlock2.acquire_permit` and
`wardlock2.campaign` block.)
"""

import asyncio
import heapq
import sys
import time
from collections import deque
from typing import Awaitable, Optional, TypeVar

import wardlock2 as locks
from wit_world.imports import monotonic_clock as _clock
from wit_world.imports import poll as _poll
from wit_world.imports.poll import Pollable

T = TypeVar("T")

__all__ = ["PollLoop", "run", "ready", "changed", "acquire", "exclusive", "shared"]


class PollLoop(asyncio.AbstractEventLoop):
    """A single-threaded asyncio loop whose only way to wait is `poll`."""

    def __init__(self) -> None:
        self._ready: deque = deque()
        self._timers: list = []
        self._waiting: list = []        # (pollable, future)
        self._running = False
        self._closed = False

    # Running.
    def run_until_complete(self, awaitable: Awaitable[T]) -> T:
        future = asyncio.ensure_future(awaitable, loop=self)
        self._running = True
        asyncio.events._set_running_loop(self)
        try:
            while not future.done():
                self._run_once(future)
        finally:
            asyncio.events._set_running_loop(None)
            self._running = False
        return future.result()

    def _run_once(self, main: "asyncio.Future") -> None:
        """Runs the callbacks ready now; then, unless that finished `main` or
        made more ready, waits in one `poll` for a pollable or the next timer."""
        for _ in range(len(self._ready)):
            handle = self._ready.popleft()
            if not handle._cancelled:
                handle._run()
        self._fire_due_timers()
        if self._ready or main.done():
            return
        self._waiting = [(p, f) for (p, f) in self._waiting if not f.done()]
        while self._timers and self._timers[0]._cancelled:
            heapq.heappop(self._timers)
        if not self._waiting and not self._timers:
            raise RuntimeError("every task waits, and on nothing wardlock's loop can wake")
        pollables = [p for (p, _) in self._waiting]
        timer = None
        if self._timers:
            delay = max(0.0, self._timers[0].when() - self.time())
            timer = _clock.subscribe_duration(int(delay * 1e9))
            pollables.append(timer)
        woken = set(_poll.poll(pollables))
        if timer is not None:
            timer.__exit__(None, None, None)
        for index, (_, future) in enumerate(self._waiting):
            if index in woken and not future.done():
                future.set_result(None)
        self._fire_due_timers()

    def _fire_due_timers(self) -> None:
        now = self.time()
        while self._timers and self._timers[0].when() <= now:
            handle = heapq.heappop(self._timers)
            if not handle._cancelled:
                self._ready.append(handle)

    def wait_pollable(self, pollable: Pollable) -> "asyncio.Future[None]":
        """A future done once `pollable` is ready."""
        future = self.create_future()
        self._waiting.append((pollable, future))
        return future

    # Scheduling.
    def call_soon(self, callback, *args, context=None):
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle

    def call_later(self, delay, callback, *args, context=None):
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def call_at(self, when, callback, *args, context=None):
        handle = asyncio.TimerHandle(when, callback, args, self, context)
        heapq.heappush(self._timers, handle)
        return handle

    def _timer_handle_cancelled(self, handle) -> None:
        pass

    def time(self) -> float:
        return time.monotonic()

    def create_future(self) -> "asyncio.Future":
        return asyncio.Future(loop=self)

    def create_task(self, coro, *, name=None, context=None) -> "asyncio.Task":
        return asyncio.Task(coro, loop=self, name=name, context=context)

    # State.
    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    def get_debug(self) -> bool:
        return False

    def call_exception_handler(self, context) -> None:
        print(f"wardlock_asyncio: {context.get('message')}: {context.get('exception')!r}",
              file=sys.stderr)

    def default_exception_handler(self, context) -> None:
        self.call_exception_handler(context)

    async def shutdown_asyncgens(self) -> None:
        pass

    async def shutdown_default_executor(self, timeout=None) -> None:
        pass


def run(main: Awaitable[T]) -> T:
    """Runs `main` to completion on a fresh `PollLoop` and returns its result."""
    loop = PollLoop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()


async def ready(pollable: Pollable) -> None:
    """Waits until `pollable` is ready, letting other tasks run meanwhile.
    Call it on `PollLoop` (`run`)."""
    loop = asyncio.get_running_loop()
    if not isinstance(loop, PollLoop):
        raise RuntimeError("wardlock_asyncio.ready needs wardlock_asyncio.run's loop")
    await loop.wait_pollable(pollable)


async def changed(observer: locks.Observer) -> None:
    """Waits until `observer`'s election has another leader (or value, or
    term) than the one `observer.leader()` last returned, letting other tasks
    run meanwhile; call `observer.leader()` for it."""
    with observer.subscribe() as pollable:
        await ready(pollable)


class _Acquire:
    """`async with acquire(...) as lock`: queues without blocking the guest,
    awaits the grant, releases on leaving (withdraws if left while queued)."""

    def __init__(self, name: str, mode: locks.Mode, timeout: Optional[float]):
        self._name, self._mode, self._timeout = name, mode, timeout
        self._guard: Optional[locks.Guard] = None

    async def __aenter__(self) -> locks.Guard:
        with locks.acquire_async(self._name, self._mode, timeout=self._timeout) as pending:
            with pending.subscribe() as finished:
                await ready(finished)
            self._guard = pending.get()
            if self._guard is None:
                raise locks.Unavailable("the acquisition finished without a result")
        return self._guard

    async def __aexit__(self, exc_type, exc, traceback) -> None:
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.__exit__(exc_type, exc, traceback)


def acquire(name: str, mode: locks.Mode = locks.Mode.EXCLUSIVE,
            timeout: Optional[float] = None) -> _Acquire:
    """`async with acquire(name, mode, timeout=...) as lock`; errors as
    `wardlock2.acquire` (`Timeout` is a `TimeoutError`)."""
    return _Acquire(name, mode, timeout)


def exclusive(name: str, timeout: Optional[float] = None) -> _Acquire:
    """`acquire(name, Mode.EXCLUSIVE, timeout)`."""
    return _Acquire(name, locks.Mode.EXCLUSIVE, timeout)


def shared(name: str, timeout: Optional[float] = None) -> _Acquire:
    """`acquire(name, Mode.SHARED, timeout)`."""
    return _Acquire(name, locks.Mode.SHARED, timeout)
