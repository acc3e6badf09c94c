#!/usr/bin/env bash
# Builds the C, Python and JavaScript guests as WASI command components; run by
# plugins/build.sh after the Rust guests.
#
#   build-languages.sh TARGET_DIR [required|optional]
#   build-languages.sh --list
#
# Writes TARGET_DIR/other-languages/<guest>-<language>.wasm and prints the
# absolute path of each on stdout, one per line, and nothing else there; tool
# output goes to stderr. A component newer than all of its inputs is not
# rebuilt, and one built before from the same inputs (by this user, in any
# checkout) is taken from the cache (see GUEST_CACHE below). A missing
# toolchain (or one not at the version pinned in plugins/toolchains.env) is an
# error naming plugins/install-toolchains.sh when REQUIRED (the default); when
# OPTIONAL that language is skipped, and one line on stderr names the skipped
# languages and the command that installs them. A guest that fails to build is an error either way. With --list it
# prints the name (<guest>-<language>) of every component it can build, and
# builds nothing.
set -euo pipefail

# Every guest, by language (c, python, js). A guest's source file is named
# after it (see compile_c, compile_python and compile_js): adding one needs its
# source file and its name here. Guests target `wardlock:lock@0.2.2` (the
# worlds `c-guest2`, `command2`, `js-command2` of plugins/wit/command.wit), the
# SDKs' default; a guest that says it runs on 0.1.0 alone targets the 0.1.0
# world (C: it defines WARDLOCK_BINDINGS "guest.h"; Python: a docstring line
# `world: command`; JavaScript: it imports wardlock1.js or the raw 0.1.0
# interface). `readers-writers` (C, Python) and `counter` (JavaScript) do, so
# the 0.1.0 forms stay exercised.
declare -A GUESTS=(
    [c]="counter readers-writers conform2"
    [python]="counter readers-writers conform2 async2"
    [js]="counter readers-writers http-counter conform2 async2"
)
LANGUAGES=(c python js)

if [[ "${1:-}" == --list ]]; then
    for language in "${LANGUAGES[@]}"; do
        for guest in ${GUESTS[$language]}; do
            echo "$guest-$language"
        done
    done
    exit 0
fi

PLUGINS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$PLUGINS")"
# shellcheck source=toolchains.env
source "$PLUGINS/toolchains.env"
OUT="${1:?usage: build-languages.sh TARGET_DIR [required|optional]}/other-languages"
MODE="${2:-required}"
mkdir -p "$OUT"
# Absolute, as the compilers run in other directories.
OUT="$(cd "$OUT" && pwd)"
TARGET_DIR="$(dirname "$OUT")"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Exit status of a language's build (run in a subshell) whose toolchain is
# missing, as opposed to a guest that failed to build.
TOOLCHAIN_MISSING=3

missing() {
    if [[ "$MODE" == required ]]; then
        echo "build.sh: $1 is missing; install the guest toolchains with: plugins/install-toolchains.sh" >&2
    else
        echo "$1" >"$OUT/.missing"
    fi
    exit "$TOOLCHAIN_MISSING"
}

# Checks that `command --version` ends in the pinned version.
require_version() { # WHAT VERSION COMMAND...
    local what="$1" version="$2" found
    shift 2
    found="$("$@" --version 2>/dev/null)" || missing "$what"
    [[ "$found" == *"$version" ]] || missing "$what $version (found: $found)"
}

# True when OUTPUT exists and is newer than every INPUT (files or directories).
up_to_date() { # OUTPUT INPUT...
    local output="$1" input file
    shift
    [[ -f "$output" ]] || return 1
    for input in "$@"; do
        while IFS= read -r -d '' file; do
            [[ "$output" -nt "$file" ]] || return 1
        done < <(find -L "$input" -type f -print0)
    done
}

# Inputs every component depends on: the lock contract, the pinned versions
# and the build scripts.
common_inputs=("$ROOT/wit" "$PLUGINS/toolchains.env" "$PLUGINS/build-languages.sh")

# Components built before, by the digest of what they were built from
# (`guest_digest`), shared by every checkout of the user's: componentize-py
# and componentize-js write a different component from the same inputs on
# every build, so without it every fresh checkout (each CI run) built the
# nine Python and JavaScript guests again (about 100 s) and, their bytes
# new, the tests compiled each with Cranelift again (15-30 s of both cores
# each; the compilation cache is keyed by the bytes). WARDLOCK_GUEST_CACHE
# names another directory, or `off` to build every component here.
GUEST_CACHE="${WARDLOCK_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wardlock-guest-builds}"

# A digest of everything LANGUAGE GUEST's component is made from: its name,
# each input file (by its path under the repository and its contents) and
# the toolchain that runs (the pinned versions are in toolchains.env, an
# input, and the build refuses others; clang is Debian's, and Node.js runs
# componentize-js: their versions are hashed too).
guest_digest() { # LANGUAGE GUEST INPUT...
    local language="$1" guest="$2" input file
    shift 2
    {
        echo "$language $guest"
        case "$language" in
        c) clang --version ;;
        js) node --version ;;
        esac
        for input in "$@"; do
            while IFS= read -r -d '' file; do
                echo "${file#"$ROOT"/}"
                sha256sum <"$file"
            done < <(find -L "$input" -type f -print0 | sort -z)
        done
    } | sha256sum | cut -c1-40
}

# Builds OUT/GUEST-LANGUAGE.wasm with `compile_LANGUAGE GUEST FILE` (FILE is
# moved into place when that succeeds) unless it is newer than every input,
# or takes it from the cache when built from the same inputs before; prints
# its path.
build_guest() { # LANGUAGE GUEST INPUT...
    local language="$1" guest="$2" component="$OUT/$2-$1.wasm" digest cached
    shift 2
    if ! up_to_date "$component" "$@" "${common_inputs[@]}"; then
        cached=""
        if [[ "$GUEST_CACHE" != off ]]; then
            digest="$(guest_digest "$language" "$guest" "$@" "${common_inputs[@]}")"
            cached="$GUEST_CACHE/$guest-$language-$digest.wasm"
        fi
        if [[ -n "$cached" && -f "$cached" ]]; then
            echo "build.sh: $guest-$language.wasm built before from the same inputs ($cached)" >&2
            cp "$cached" "$component.tmp"
        else
            echo "build.sh: building $guest-$language.wasm" >&2
            "compile_$language" "$guest" "$component.tmp" >&2
            if [[ -n "$cached" ]]; then
                # Written whole under a name of its own, then renamed: a
                # build beside this one never reads half a component.
                mkdir -p "$GUEST_CACHE"
                cp "$component.tmp" "$cached.$$"
                mv "$cached.$$" "$cached"
            fi
        fi
        mv "$component.tmp" "$component"
    fi
    echo "$component"
}

# --- C: clang + wasi-libc, wardlock-c-tool ----------------------------------
# wardlock-c-tool (guest-sdk/c-tool) writes the bindings `wit-bindgen c` would
# and wraps the module as `wasm-tools component new` would, from the crates
# those tools are made of, at the versions of the workspace's Cargo.lock: it
# compiles in seconds beside the Rust guests, where installing the two tools
# compiled a second component toolchain (659 s on a new 2-core machine).
C_TOOL_SOURCES=("$ROOT/guest-sdk/c-tool" "$ROOT/Cargo.lock")
C_ADAPTER="$PLUGINS/c/.adapter/wasi_snapshot_preview1.command-$ADAPTER_VERSION.wasm"
# The C guest SDK, header-only (`#include "wardlock.h"`: the 0.2 API under
# `wardlock_` and `wardlock2_` names, or 0.1.0's for a guest of 0.1.0 alone;
# `wardlock_v2.h` has the `wardlock2_` names only).
C_SDK="$ROOT/guest-sdk/c"

build_c() {
    command -v clang >/dev/null || missing "clang (Debian package clang)"
    command -v wasm-ld >/dev/null || missing "wasm-ld (Debian package lld)"
    [[ -f /usr/lib/wasm32-wasi/libc.a ]] || missing "the wasm32-wasi sysroot (Debian package wasi-libc)"
    compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null ||
        missing "clang's wasm32 builtins (Debian package libclang-rt-dev-wasm32)"
    [[ -f "$C_ADAPTER" ]] || missing "the WASI command adapter $C_ADAPTER"
    local guest
    for guest in ${GUESTS[c]}; do
        build_guest c "$guest" "$PLUGINS/c/${guest//-/_}.c" "$PLUGINS/c/common.h" "$C_SDK/start.c" \
            "$C_SDK/wardlock.h" "$C_SDK/wardlock_v2.h" "$PLUGINS/wit" "$C_ADAPTER" "${C_TOOL_SOURCES[@]}"
    done
}

# wardlock-c-tool, built in the Rust guests' target dir the first time a C
# guest is compiled (not when every C guest comes from the cache: then the
# build needs no tool at all).
C_TOOL=""
c_tool() {
    if [[ -z "$C_TOOL" ]]; then
        (cd "$ROOT" && cargo build --quiet --locked -p wardlock-c-tool --target-dir "$TARGET_DIR") >&2
        C_TOOL="$TARGET_DIR/debug/wardlock-c-tool"
    fi
}

compile_c() { # GUEST OUTPUT
    local bindings="$OUT/c-bindings2" core="$OUT/$1-c.core.wasm" world=c-guest2
    c_tool
    if grep -q '#define WARDLOCK_BINDINGS "guest.h"' "$PLUGINS/c/${1//-/_}.c"; then
        # A guest of 0.1.0 alone (it says so before including wardlock.h).
        bindings="$OUT/c-bindings" world=guest
        "$C_TOOL" bindings "$ROOT/wit" --world "$world" --out-dir "$bindings"
    else
        # 0.2 and the monotonic clock (guest-sdk/c/wardlock.h, wardlock_v2.h).
        "$C_TOOL" bindings "$PLUGINS/wit" --world "$world" --out-dir "$bindings"
    fi
    # A reactor with its own `_start` (see guest-sdk/c/start.c for why).
    clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -I "$bindings" -I "$C_SDK" \
        -o "$core" "$PLUGINS/c/${1//-/_}.c" "$C_SDK/start.c" "$bindings/${world//-/_}.c" \
        "$bindings/${world//-/_}_component_type.o" -Wl,--strip-debug
    "$C_TOOL" component "$core" --adapt "wasi_snapshot_preview1=$C_ADAPTER" -o "$2"
}

# --- Python: componentize-py -----------------------------------------------
COMPONENTIZE_PY="$PLUGINS/python/.venv/bin/componentize-py"
# The Python guest SDK (`import wardlock`: the 0.2 API on a 0.2 world, 0.1.0's
# on a 0.1.0 one; both over `wardlock_core`; `wardlock2` names the 0.2 API).
PYTHON_SDK="$ROOT/guest-sdk/python/wardlock.py"
PYTHON_SDK_CORE="$ROOT/guest-sdk/python/wardlock_core.py"
PYTHON_SDK2="$ROOT/guest-sdk/python/wardlock2.py"
# asyncio over wasi:io/poll, for 0.2.0 guests (`import wardlock_asyncio`).
PYTHON_SDK_ASYNC="$ROOT/guest-sdk/python/wardlock_asyncio.py"

build_python() {
    require_version "componentize-py (in plugins/python/.venv)" "$COMPONENTIZE_PY_VERSION" "$COMPONENTIZE_PY"
    local guest
    for guest in ${GUESTS[python]}; do
        build_guest python "$guest" "$PLUGINS/python/${guest//-/_}.py" "$PLUGINS/python/guest_common.py" \
            "$PYTHON_SDK" "$PYTHON_SDK_CORE" "$PYTHON_SDK2" "$PYTHON_SDK_ASYNC" "$PLUGINS/wit"
    done
}

compile_python() { # GUEST OUTPUT
    # The guest module, the helpers it shares and the SDK alone on the Python
    # path, so nothing else in plugins/python (or the build machine's
    # site-packages) is bundled.
    # The 0.2 world, unless the guest's docstring names the world of 0.1.0
    # alone (a line `world: command`).
    local module="${1//-/_}" app="$OUT/python-src/$1" world=command2
    rm -rf "$app"
    mkdir -p "$app"
    cp "$PLUGINS/python/$module.py" "$PLUGINS/python/guest_common.py" "$PYTHON_SDK" "$PYTHON_SDK_CORE" "$app/"
    if grep -qx "world: command" "$PLUGINS/python/$module.py"; then
        world=command
    else
        cp "$PYTHON_SDK2" "$PYTHON_SDK_ASYNC" "$app/"
    fi
    (cd "$app" && "$COMPONENTIZE_PY" -d "$PLUGINS/wit" -w "$world" componentize -p . "$module" -o "$2")
}

# --- JavaScript: componentize-js -------------------------------------------
COMPONENTIZE_JS="$PLUGINS/js/node_modules/.bin/componentize-js"
# The JavaScript guest SDK's directory: the guests import it by its relative
# path (`../../guest-sdk/js/wardlock.js`, the 0.2 API; `wardlock1.js` for a
# guest of 0.1.0 alone; both build on `wardlock-core.js`), which
# componentize-js bundles (see compile_js).
JS_SDK="$ROOT/guest-sdk/js"

build_js() {
    command -v node >/dev/null || missing "node (Node.js 20 or later)"
    require_version "componentize-js (in plugins/js/node_modules)" "$COMPONENTIZE_JS_VERSION" "$COMPONENTIZE_JS"
    local guest
    for guest in ${GUESTS[js]}; do
        build_guest js "$guest" "$PLUGINS/js/$guest.js" "$PLUGINS/js/wasi-file.js" "$JS_SDK" "$PLUGINS/wit"
    done
}

compile_js() { # GUEST OUTPUT
    # From the repository root: componentize-js lets the module load files
    # (its relative imports) only from below its working directory, or from
    # the guest's own directory when it is not below it; the SDK is outside
    # plugins/js.
    if [[ "$1" == http-* ]]; then
        # A wasi:http/proxy-shaped guest for `wardlock serve`.
        (cd "$ROOT" && "$COMPONENTIZE_JS" "$PLUGINS/js/$1.js" --wit "$PLUGINS/wit" --world-name js-http -o "$2")
    else
        # wardlock run links WASI 0.2 but not wasi:http, so leave out the
        # engine's fetch support.
        # The 0.2 world, unless the guest imports 0.1.0 alone (wardlock1.js,
        # or the raw 0.1.0 interface).
        local world=js-command2
        grep -q "wardlock1\.js\|wardlock:lock/locks@0\.1\.0" "$PLUGINS/js/$1.js" && world=js-command
        (cd "$ROOT" && "$COMPONENTIZE_JS" "$PLUGINS/js/$1.js" --wit "$PLUGINS/wit" --world-name "$world" \
            --disable http fetch-event -o "$2")
    fi
}

declare -A LANGUAGE_NAMES=([c]=C [python]=Python [js]=JavaScript)
skipped=()
for language in "${LANGUAGES[@]}"; do
    # Not `(...) || status=$?`: bash ignores `set -e` inside a command that is
    # tested, and a failing compiler must stop the build.
    set +e
    (
        set -e
        "build_$language"
    )
    status=$?
    set -e
    if ((status == TOOLCHAIN_MISSING)) && [[ "$MODE" != required ]]; then
        skipped+=("${LANGUAGE_NAMES[$language]} (no $(cat "$OUT/.missing"))")
    elif ((status != 0)); then
        exit "$status"
    fi
done
rm -f "$OUT/.missing"
if ((${#skipped[@]})); then
    joined="$(printf '%s, ' "${skipped[@]}")"
    echo "build.sh: skipped the ${joined%, } guests; install their toolchains with: plugins/install-toolchains.sh" >&2
fi
