"""A small kazoo client for wardlock's interop tests.

Usage: kazoo_driver.py CONNECT PATH KIND COMMAND [ARGS...]
  KIND:    lock (Lock) | write (WriteLock) | read (ReadLock)
  COMMAND: counter N FILE | hold | try | hold-forever   (as LockDriver.java)
"""
import sys
import time

from kazoo.client import KazooClient


def say(line):
    print(line, flush=True)


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    connect, path, kind, command = argv[1:5]
    client = KazooClient(hosts=connect, timeout=2.0)
    client.start(timeout=30)
    factory = {"lock": client.Lock, "write": client.WriteLock, "read": client.ReadLock}.get(kind)
    if factory is None:
        print(f"unknown kind {kind}", file=sys.stderr)
        return 2
    lock = factory(path, "kazoo-driver")
    if command == "counter":
        n, file = int(argv[5]), argv[6]
        for _ in range(n):
            with lock:
                try:
                    with open(file) as f:
                        text = f.read().strip()
                    value = int(text) if text else 0
                except FileNotFoundError:
                    value = 0
                with open(file, "w") as f:
                    f.write(str(value + 1))
        say(f"done {n}")
    elif command == "hold":
        lock.acquire()
        say("holding")
        sys.stdin.readline()
        lock.release()
        say("released")
    elif command == "try":
        if lock.acquire(blocking=False):
            say("acquired")
            sys.stdin.readline()
            lock.release()
            say("released")
        else:
            say("busy")
    elif command == "hold-forever":
        lock.acquire()
        say("holding")
        while True:
            time.sleep(3600)
    else:
        print(f"unknown command {command}", file=sys.stderr)
        return 2
    client.stop()
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
