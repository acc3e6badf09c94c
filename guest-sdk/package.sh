#!/usr/bin/env bash
# Builds the Python and JavaScript guest SDKs as installable packages:
#
#   guest-sdk/package.sh OUT_DIR
#
# writes OUT_DIR/wardlock_guest-<version>-py3-none-any.whl (pip) and
# OUT_DIR/wardlock-guest-<version>.tgz (npm), each carrying the WIT worlds its
# guests are built against (copied in from plugins/wit, the one source), and
# prints their paths on stdout. Needs the Python toolchain of
# plugins/install-toolchains.sh (its virtualenv has pip and setuptools, so
# nothing is downloaded) and npm.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: guest-sdk/package.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
PYTHON="$ROOT/plugins/python/.venv/bin/python"
[[ -x "$PYTHON" ]] || { echo "package.sh: no $PYTHON: run plugins/install-toolchains.sh" >&2; exit 1; }

# Python: the modules, and the WIT inside the `wardlock_wit` package.
mkdir -p "$STAGE/python"
cp "$ROOT"/guest-sdk/python/*.py "$ROOT/guest-sdk/python/pyproject.toml" "$STAGE/python/"
cp -r "$ROOT/guest-sdk/python/wardlock_wit" "$STAGE/python/"
cp -r "$ROOT"/plugins/wit/* "$STAGE/python/wardlock_wit/"
"$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation "$STAGE/python" -w "$OUT" >&2
ls "$OUT"/wardlock_guest-*-py3-none-any.whl

# JavaScript: the modules, their types, and the WIT under wit/.
mkdir -p "$STAGE/js"
cp "$ROOT"/guest-sdk/js/*.js "$ROOT"/guest-sdk/js/*.d.ts "$ROOT/guest-sdk/js/package.json" "$STAGE/js/"
cp -r "$ROOT/plugins/wit" "$STAGE/js/wit"
(cd "$STAGE/js" && npm pack --silent --pack-destination "$OUT" >/dev/null)
ls "$OUT"/wardlock-guest-*.tgz
