"""Python guest SDK for wardlock: named, distributed locks as context managers.

The one module a guest imports, whatever `wardlock:lock` version its world
has: on a world of 0.2.x (`command2` in `plugins/wit/command.wit`) it is the
whole 0.2 API (`wardlock2`: subscriptions, pending locks, several locks at
once, permits, revocation, contenders, the guarded store:
`guard.put(key, value)`, `wardlock.get(name, key)`, leader election:
`wardlock.campaign(name, value)`, `wardlock.leader(name)`,
`wardlock.observe(name)`); on a world of 0.1.0
alone it is the 0.1.0 API (`wardlock_core`). Code written for 0.1.0 runs
unchanged on 0.2, and `import wardlock2` keeps working as another name for
the 0.2 API::

    import wardlock

    with wardlock.exclusive("orders", timeout=5) as lock:
        for item in order:
            lock.check()            # raises Lost once the lock is taken away
            charge(item, fencing_token=lock.fencing_token)
    # released here, whether the block returned or raised

    guard = wardlock.try_shared("config")       # None when it would wait
    if guard is not None:
        with guard:
            ...

Build: put `wardlock.py`, `wardlock_core.py` and (for 0.2) `wardlock2.py`
beside the guest's module on componentize-py's path
(`plugins/build-languages.sh` copies them there), or install the wheel.
"""

from wardlock_core import *  # noqa: F401,F403  (the 0.1.0 API)
from wardlock_core import __all__ as _core_all
from wit_world.imports import locks as _locks

if hasattr(_locks, "acquire_async"):  # the world imports 0.2.x
    from wardlock2 import *  # noqa: F401,F403
    from wardlock2 import __all__
else:
    __all__ = list(_core_all)
