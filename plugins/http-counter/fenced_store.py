#!/usr/bin/env python3
"""A fenced key-value store: the resource side of wardlock's fencing tokens.

    python3 plugins/http-counter/fenced_store.py [PORT]   (default 9000; 0: any free port)

GET /<key> returns the value (404 when unset). PUT /<key> with a
`fencing-token: N` header stores the body only if N is greater than every token
accepted for that key before; otherwise it answers 409 and keeps the value. So a
writer whose lock was taken back (lease expired, session lost) can never
overwrite a value written under a newer grant. Prints "listening on PORT" once
ready; GET /_stats returns "accepted N rejected M".

Every request's `wardlock-fence` fields (what `wardlock serve --fence-header
wardlock-fence` adds: `LOCK=TOKEN` for each exclusive lock the guest holds)
are recorded; GET /_fences returns one line per request: `METHOD /key
LOCK=TOKEN,...` (`-` when the request had none).
"""
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
VALUES = {}
TOKENS = {}
STATS = {"accepted": 0, "rejected": 0}
FENCES = []


class Handler(BaseHTTPRequestHandler):
    def _answer(self, status, text):
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record_fences(self):
        values = self.headers.get_all("wardlock-fence") or []
        FENCES.append(f"{self.command} {self.path} {','.join(values) or '-'}")

    def do_GET(self):
        key = self.path.lstrip("/")
        with LOCK:
            if key == "_fences":
                self._answer(200, "\n".join(FENCES))
                return
            self._record_fences()
            if key == "_stats":
                self._answer(200, f"accepted {STATS['accepted']} rejected {STATS['rejected']}")
            elif key in VALUES:
                self._answer(200, VALUES[key])
            else:
                self._answer(404, "unset")

    def do_PUT(self):
        key = self.path.lstrip("/")
        length = int(self.headers.get("content-length") or 0)
        value = self.rfile.read(length).decode().strip()
        try:
            token = int(self.headers.get("fencing-token", ""))
        except ValueError:
            self._answer(400, "a fencing-token header with a number is required")
            return
        with LOCK:
            self._record_fences()
            last = TOKENS.get(key)
            if last is not None and token <= last:
                STATS["rejected"] += 1
                self._answer(409, f"stale fencing token {token}: {last} was accepted already")
                return
            TOKENS[key] = token
            VALUES[key] = value
            STATS["accepted"] += 1
        self._answer(200, "stored")

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
