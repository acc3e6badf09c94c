#!/usr/bin/env bash
# Builds the wardlock guest plugins as WebAssembly components
# (wasm32-wasip2 binaries built with wit-bindgen are components directly),
# then the C, Python and JavaScript guests (build-languages.sh; their
# toolchains come from plugins/install-toolchains.sh).
#
# Prints the absolute path of each component on stdout, one per line, and
# nothing else there; cargo's output goes to stderr.
#
# Environment:
#   WARDLOCK_GUEST_TARGET_DIR  cargo target dir (default: <repo>/target/guests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET=wasm32-wasip2
TARGET_DIR="${WARDLOCK_GUEST_TARGET_DIR:-$ROOT/target/guests}"
PLUGINS=(counter readers-writers misbehave lockctl bench-guest)

if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET" >&2
fi

# Make a relative override absolute, so printed paths are absolute.
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"

package_args=()
for plugin in "${PLUGINS[@]}"; do
    package_args+=(-p "$plugin")
done

(cd "$ROOT" && cargo build --release --target "$TARGET" --target-dir "$TARGET_DIR" "${package_args[@]}") >&2

for plugin in "${PLUGINS[@]}"; do
    component="$TARGET_DIR/$TARGET/release/$plugin.wasm"
    if [[ ! -f "$component" ]]; then
        echo "build.sh: expected component missing: $component" >&2
        exit 1
    fi
    echo "$component"
done

# The C, Python and JavaScript guests, in $TARGET_DIR/other-languages/.
bash "$ROOT/plugins/build-languages.sh" "$TARGET_DIR"
