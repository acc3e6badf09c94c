#!/usr/bin/env bash
# Runs one end-to-end test again and again under a parallel CPU load, and
# stops at the first failure or at a run that outlives its bound: the soak
# behind issue 52's hang hunt (a test that passed twice and hung the third
# time). Not part of CI; run it by hand:
#
#   tests/soak/loop.sh [--runs N] [--load N] [--bound SECONDS] TEST_FILTER
#
#   --runs N        runs in all (default 50)
#   --load N        busy loops beside it, one process each (default 2: both
#                   cores of a CI machine)
#   --bound S       the most one run may take before it counts as a hang
#                   (default 300): the run is interrupted (SIGINT, so the
#                   test's server guards stop what it started) and its
#                   output kept
#   TEST_FILTER     an exact e2e test name, `postgres::postgres_backend_conforms`
#
# Prints one line per run (number, exit code, seconds) and keeps each run's
# output in target/soak/<filter>/run-N.log. Exit status 0 when every run
# passed. The busy loops are this script's children, ended by their PIDs
# when it exits, however it exits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

runs=50 load=2 bound=300 filter=
while (($#)); do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --bound) bound=$2; shift 2 ;;
    -*) echo "loop.sh: unknown option $1" >&2; exit 2 ;;
    *) filter=$1; shift ;;
    esac
done
[[ -n "$filter" ]] || { echo "loop.sh: name the test to run (e.g. postgres::postgres_backend_conforms)" >&2; exit 2; }

echo "soak: building the e2e test binary" >&2
# The same build as `cargo test` (no `-p`: features unify as there).
binary=$(cargo test --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "e2e" and m.get("executable"):
        print(m["executable"])')
[[ -x "$binary" ]] || { echo "loop.sh: no e2e binary was built" >&2; exit 1; }
logs="target/soak/${filter//::/-}"
mkdir -p "$logs"

loaders=()
stop_load() { ((${#loaders[@]})) && kill "${loaders[@]}" 2>/dev/null; true; }
trap stop_load EXIT
for ((i = 0; i < load; i++)); do
    (while :; do :; done) &
    loaders+=($!)
done

failed=0
for ((run = 1; run <= runs; run++)); do
    started=$SECONDS
    status=0
    timeout --signal=INT --kill-after=30 "$bound" "$binary" "$filter" --exact --nocapture \
        >"$logs/run-$run.log" 2>&1 || status=$?
    echo "run $run: exit $status in $((SECONDS - started)) s"
    if ((status != 0)); then
        ((status == 124)) && echo "soak: run $run outlived its bound of $bound s (a hang): see $logs/run-$run.log"
        failed=1
        break
    fi
done
((failed)) || echo "soak: $runs runs of $filter passed under a load of $load busy loops"
exit "$failed"
