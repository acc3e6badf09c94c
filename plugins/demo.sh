#!/usr/bin/env bash
# The wardlock demo: N counter instances increment one file under one lock on the
# embedded (in-memory) backend; the final count must equal the sum of increments.
#
# Usage: plugins/demo.sh [INSTANCES] [ITERATIONS]   (default 8 instances x 100)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSTANCES="${1:-8}"
ITERATIONS="${2:-100}"
# Where cargo puts the host binary (CARGO_TARGET_DIR when set).
HOST_TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

echo "demo: building the counter guest (wasm32-wasip2)..." >&2
COUNTER="$(bash "$ROOT/plugins/build.sh" --rust-only counter)"
echo "demo: building the wardlock host..." >&2
# `--bin wardlock` at the root, not `-p wardlock`: a build of one package
# resolves its dependencies' features for that package alone, so after the
# test build (CI) it compiled tokio and everything above it a second time.
(cd "$ROOT" && cargo build -q --bin wardlock)

DATA="$(mktemp -d)"
trap 'rm -rf "$DATA"' EXIT
echo "demo: wardlock run --instances $INSTANCES --dir $DATA::/data counter.wasm -- demo $ITERATIONS /data/count" >&2
"$HOST_TARGET/debug/wardlock" run --instances "$INSTANCES" --dir "$DATA::/data" "$COUNTER" \
    -- demo "$ITERATIONS" /data/count >/dev/null

EXPECTED=$((INSTANCES * ITERATIONS))
ACTUAL="$(cat "$DATA/count")"
echo "final count: $ACTUAL (expected $INSTANCES x $ITERATIONS = $EXPECTED)"
if [[ "$ACTUAL" != "$EXPECTED" ]]; then
    echo "demo: LOST UPDATES: mutual exclusion failed" >&2
    exit 1
fi
cat <<NEXT

Next steps (README.md has the details):
  serve plugins over HTTP, one lock session per request:
    plugins/build.sh --rust-only http-counter    # prints .../http-counter.wasm
    target/debug/wardlock serve --dir /tmp::/data .../http-counter.wasm
    curl -X POST localhost:8080/orders
  lock on ZooKeeper instead of in memory (Debian: apt-get install zookeeper):
    target/debug/wardlock run --zookeeper 127.0.0.1:2181 --instances 8 \\
      --dir DIR::/data $COUNTER -- demo 100 /data/count
  or on etcd, sharing locks with etcdctl lock (Debian: apt-get install etcd-server):
    target/debug/wardlock run --etcd 127.0.0.1:2379 --instances 8 \\
      --dir DIR::/data $COUNTER -- demo 100 /data/count
  every test (installs ZooKeeper and the guest toolchains): .ci/run
NEXT
