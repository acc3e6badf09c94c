#!/usr/bin/env bash
# Builds the C, Python and JavaScript guests as WASI command components; run by
# plugins/build.sh after the Rust guests.
#
#   build-languages.sh TARGET_DIR [required|optional]
#
# Writes TARGET_DIR/other-languages/<guest>-<language>.wasm and prints the
# absolute path of each on stdout, one per line, and nothing else there; tool
# output goes to stderr. A component newer than all of its inputs is not
# rebuilt. A missing toolchain (or one not at the version pinned in
# plugins/toolchains.env) is an error naming plugins/install-toolchains.sh
# when REQUIRED (the default); when OPTIONAL that language is skipped, and one
# line on stderr names the skipped languages and the command that installs
# them. A guest that fails to build is an error either way.
set -euo pipefail

PLUGINS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$PLUGINS")"
# shellcheck source=toolchains.env
source "$PLUGINS/toolchains.env"
OUT="${1:?usage: build-languages.sh TARGET_DIR [required|optional]}/other-languages"
MODE="${2:-required}"
mkdir -p "$OUT"
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

# --- C: clang + wasi-libc, wit-bindgen c, wasm-tools component new ----------
build_c() {
    local adapter="$PLUGINS/c/.adapter/wasi_snapshot_preview1.command-$ADAPTER_VERSION.wasm"
    command -v clang >/dev/null || missing "clang (Debian package clang)"
    command -v wasm-ld >/dev/null || missing "wasm-ld (Debian package lld)"
    [[ -f /usr/lib/wasm32-wasi/libc.a ]] || missing "the wasm32-wasi sysroot (Debian package wasi-libc)"
    compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null ||
        missing "clang's wasm32 builtins (Debian package libclang-rt-dev-wasm32)"
    require_version "wit-bindgen (crate wit-bindgen-cli)" "$WIT_BINDGEN_VERSION" wit-bindgen
    require_version wasm-tools "$WASM_TOOLS_VERSION" wasm-tools
    [[ -f "$adapter" ]] || missing "the WASI command adapter $adapter"

    local bindings="$OUT/c-bindings" guest component
    for guest in counter readers-writers; do
        component="$OUT/$guest-c.wasm"
        local source="$PLUGINS/c/${guest//-/_}.c"
        if ! up_to_date "$component" "$source" "$PLUGINS/c/common.h" "$PLUGINS/c/start.c" "$adapter" \
            "${common_inputs[@]}"; then
            echo "build.sh: building $guest-c.wasm" >&2
            wit-bindgen c "$ROOT/wit" --world guest --out-dir "$bindings" >&2
            # A reactor with its own `_start` (see c/start.c for why).
            clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -I "$bindings" \
                -o "$OUT/$guest-c.core.wasm" "$source" "$PLUGINS/c/start.c" "$bindings/guest.c" \
                "$bindings/guest_component_type.o" -Wl,--strip-debug >&2
            wasm-tools component new "$OUT/$guest-c.core.wasm" \
                --adapt "wasi_snapshot_preview1=$adapter" -o "$component.tmp" >&2
            mv "$component.tmp" "$component"
        fi
        echo "$component"
    done
}

# --- Python: componentize-py -----------------------------------------------
build_python() {
    local componentize_py="$PLUGINS/python/.venv/bin/componentize-py" guest component
    require_version "componentize-py (in plugins/python/.venv)" "$COMPONENTIZE_PY_VERSION" "$componentize_py"
    for guest in counter readers-writers; do
        component="$OUT/$guest-python.wasm"
        local module="${guest//-/_}"
        if ! up_to_date "$component" "$PLUGINS/python/$module.py" "$PLUGINS/wit" "${common_inputs[@]}"; then
            echo "build.sh: building $guest-python.wasm" >&2
            # The guest module alone on the Python path, so nothing else in
            # plugins/python (or the build machine's site-packages) is bundled.
            local app="$OUT/python-src/$guest"
            rm -rf "$app"
            mkdir -p "$app"
            cp "$PLUGINS/python/$module.py" "$app/"
            (cd "$app" && "$componentize_py" -d "$PLUGINS/wit" -w command componentize \
                -p . "$module" -o "$component.tmp") >&2
            mv "$component.tmp" "$component"
        fi
        echo "$component"
    done
}

# --- JavaScript: componentize-js -------------------------------------------
build_js() {
    local componentize_js="$PLUGINS/js/node_modules/.bin/componentize-js" guest component
    command -v node >/dev/null || missing "node (Node.js 20 or later)"
    require_version "componentize-js (in plugins/js/node_modules)" "$COMPONENTIZE_JS_VERSION" "$componentize_js"
    for guest in counter readers-writers; do
        component="$OUT/$guest-js.wasm"
        if ! up_to_date "$component" "$PLUGINS/js/$guest.js" "$PLUGINS/js/wasi-file.js" "$PLUGINS/wit" "${common_inputs[@]}"; then
            echo "build.sh: building $guest-js.wasm" >&2
            # wardlock run links WASI 0.2 but not wasi:http, so leave out the
            # engine's fetch support.
            "$componentize_js" "$PLUGINS/js/$guest.js" --wit "$PLUGINS/wit" --world-name js-command \
                --disable http fetch-event -o "$component.tmp" >&2
            mv "$component.tmp" "$component"
        fi
        echo "$component"
    done
    # The HTTP counter: a wasi:http/proxy-shaped guest for `wardlock serve`.
    component="$OUT/http-counter-js.wasm"
    if ! up_to_date "$component" "$PLUGINS/js/http-counter.js" "$PLUGINS/js/wasi-file.js" "$PLUGINS/wit" "${common_inputs[@]}"; then
        echo "build.sh: building http-counter-js.wasm" >&2
        "$componentize_js" "$PLUGINS/js/http-counter.js" --wit "$PLUGINS/wit" --world-name js-http \
            -o "$component.tmp" >&2
        mv "$component.tmp" "$component"
    fi
    echo "$component"
}

skipped=()
for language in C Python JavaScript; do
    builder="build_$(tr 'A-Z' 'a-z' <<<"$language")"
    [[ "$builder" == build_javascript ]] && builder=build_js
    status=0
    ("$builder") || status=$?
    if ((status == TOOLCHAIN_MISSING)) && [[ "$MODE" != required ]]; then
        skipped+=("$language (no $(cat "$OUT/.missing"))")
    elif ((status != 0)); then
        exit "$status"
    fi
done
rm -f "$OUT/.missing"
if ((${#skipped[@]})); then
    joined="$(printf '%s, ' "${skipped[@]}")"
    echo "build.sh: skipped the ${joined%, } guests; install their toolchains with: plugins/install-toolchains.sh" >&2
fi
