#!/usr/bin/env bash
# Builds the wardlock guest plugins as WebAssembly components
# (wasm32-wasip2 binaries built with wit-bindgen are components directly),
# then the C, Python and JavaScript guests (build-languages.sh; their
# toolchains come from plugins/install-toolchains.sh).
#
#   build.sh [--all | --rust-only] [PLUGIN...]
#   build.sh --list
#
#   (default)    the Rust guests, plus every other language whose toolchain is
#                installed; one line on stderr names the languages skipped and
#                the command that installs them
#   --all        every language; a missing toolchain is an error (CI, tests)
#   --rust-only  the Rust guests alone (what plugins/demo.sh needs)
#   PLUGIN...    print only these Rust guests' paths (default: all of them;
#                every Rust guest is built either way, see below)
#   --list       print the name of every component it can build (`counter`,
#                `counter-python`, ...: `<name>.wasm` is the file), one per
#                line, whatever is installed; build nothing
#
# Prints the absolute path of each component on stdout, one per line, and
# nothing else there; cargo's output goes to stderr.
#
# Environment:
#   WARDLOCK_GUEST_TARGET_DIR  cargo target dir (default: <repo>/target/guests)
#   WARDLOCK_AWAIT_INSTALLS    a lock file the toolchains' installs hold (.ci/run):
#                              the other languages' guests wait until it is free
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET=wasm32-wasip2
TARGET_DIR="${WARDLOCK_GUEST_TARGET_DIR:-$ROOT/target/guests}"
# Every Rust guest: each directory of plugins/ with a Cargo.toml (the crate is
# named after its directory), so adding a guest needs no edit here.
ALL_PLUGINS=()
for manifest in "$ROOT"/plugins/*/Cargo.toml; do
    ALL_PLUGINS+=("$(basename "$(dirname "$manifest")")")
done

languages=optional
PLUGINS=()
for arg in "$@"; do
    case "$arg" in
    --all) languages=required ;;
    --rust-only) languages=none ;;
    --list)
        printf '%s\n' "${ALL_PLUGINS[@]}"
        exec bash "$ROOT/plugins/build-languages.sh" --list
        ;;
    -*)
        echo "build.sh: unknown option $arg (expected --all, --rust-only or --list)" >&2
        exit 2
        ;;
    *)
        if [[ " ${ALL_PLUGINS[*]} " != *" $arg "* ]]; then
            echo "build.sh: unknown plugin $arg (one of: ${ALL_PLUGINS[*]})" >&2
            exit 2
        fi
        PLUGINS+=("$arg")
        ;;
    esac
done
((${#PLUGINS[@]})) || PLUGINS=("${ALL_PLUGINS[@]}")

if ! rustup target list --installed | grep -qx "$TARGET"; then
    rustup target add "$TARGET" >&2
fi

# Make a relative override absolute, so printed paths are absolute.
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"

# Every Rust guest is built, whichever are asked for (those are printed):
# cargo unifies the dependencies' features over the packages it builds, so a
# build of a few of them compiles wit-bindgen and the SDK again with other
# features, and each caller (the test crate's build script, the conformance
# kit's, the book's commands) would repeat the others' work (34 s of a cold
# CI build). As one set, the second build of any of them is a no-op.
package_args=()
for plugin in "${ALL_PLUGINS[@]}"; do
    package_args+=(-p "$plugin")
done

(cd "$ROOT" && cargo build --release --target "$TARGET" --target-dir "$TARGET_DIR" "${package_args[@]}") >&2

for plugin in "${PLUGINS[@]}"; do
    component="$TARGET_DIR/$TARGET/release/$plugin.wasm"
    # A cdylib (an HTTP guest) is named with underscores: give it the
    # plugin's name, so every guest is <plugin>.wasm.
    library="$TARGET_DIR/$TARGET/release/${plugin//-/_}.wasm"
    if [[ "$library" != "$component" && -f "$library" && ( ! -f "$component" || "$library" -nt "$component" ) ]]; then
        cp "$library" "$component"
    fi
    if [[ ! -f "$component" ]]; then
        echo "build.sh: expected component missing: $component" >&2
        exit 1
    fi
    echo "$component"
done

# The C, Python and JavaScript guests, in $TARGET_DIR/other-languages/.
if [[ "$languages" != none ]]; then
    # .ci/run builds while it installs their toolchains, and holds a lock
    # until the installs end: wait for them (a shared lock is granted once
    # they let go, at once when nothing installs).
    if [[ -n "${WARDLOCK_AWAIT_INSTALLS:-}" && -e "$WARDLOCK_AWAIT_INSTALLS" ]] &&
        ! flock -s -n "$WARDLOCK_AWAIT_INSTALLS" true; then
        echo "build.sh: waiting for the toolchains' installs to end (.ci/run)" >&2
        flock -s "$WARDLOCK_AWAIT_INSTALLS" true
    fi
    bash "$ROOT/plugins/build-languages.sh" "$TARGET_DIR" "$languages"
fi
