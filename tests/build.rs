//! Builds every example and test guest once per test build (like wasmtime's
//! test-programs): runs `plugins/build.sh` and writes `$OUT_DIR/guests.rs`, the
//! table `GUESTS` that `src/lib.rs` includes: every component the build scripts
//! can make (`plugins/build.sh --list`), by name (`counter-python` for
//! `counter-python.wasm`), with its path when this build made it.
//!
//! Under CI (`CI` set, as `.ci/run` runs) every language's guests are required
//! (`build.sh --all`); elsewhere guests whose toolchain is missing are skipped and
//! the tests that need them fail with a message naming the installer.

#![allow(
    clippy::expect_used,
    reason = "a build script: a panic is how it fails the build, with its message"
)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_path_buf();
    watch_sources(&root.join("plugins"));
    for watched in ["guest-sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CI");
    let script = root.join("plugins/build.sh");
    let names = run(Command::new("bash").arg(&script).arg("--list"));
    let mut build = Command::new("bash");
    build.arg(&script);
    if std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()) {
        build.arg("--all");
    }
    let paths = run(build
        // The outer cargo's settings are for the host target, not for guests.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET"));
    let mut table = String::from("&[\n");
    for name in names.lines() {
        let path = paths.lines().find(|path| {
            path.ends_with(".wasm") && Path::new(path).file_stem() == Some(OsStr::new(name))
        });
        table.push_str(&format!("    ({name:?}, {path:?}),\n"));
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("guests.rs"), table).expect("write guests.rs");
}

/// What `plugins/install-toolchains.sh` puts under `plugins/` (the Python
/// virtualenv, Node.js's modules, the C guests' adapter) and what running
/// the Python guests' tools leaves: not sources of the guests.
const INSTALLED: [&str; 4] = [".venv", "node_modules", ".adapter", "__pycache__"];

/// Asks cargo to run this script again when a source of the guests under
/// `dir` changes, and not when only an installed toolchain does: `.ci/run`
/// installs them while this build runs, and watching `plugins/` whole (cargo
/// scans a watched directory's whole tree) would have run this script again
/// and rebuilt the test crate in the next cargo command.
fn watch_sources(dir: &Path) {
    let entries = std::fs::read_dir(dir).expect("plugins/ is readable");
    for entry in entries {
        let path = entry.expect("plugins/ is readable").path();
        let name = path.file_name().and_then(OsStr::to_str).unwrap_or_default();
        if INSTALLED.contains(&name) {
            continue;
        }
        if path.is_dir() && ["c", "python", "js"].contains(&name) {
            watch_sources(&path);
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// Runs `command` (a build script: its stderr passes through) and returns its
/// stdout.
fn run(command: &mut Command) -> String {
    let output = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cannot run bash plugins/build.sh");
    if !output.status.success() {
        panic!(
            "plugins/build.sh failed ({}); run it by hand to see why",
            output.status
        );
    }
    String::from_utf8(output.stdout).expect("plugins/build.sh prints UTF-8 paths")
}
