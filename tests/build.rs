//! Builds every example and test guest once per test build (like wasmtime's
//! test-programs): runs `plugins/build.sh` and exposes each component's path to the
//! tests as `WARDLOCK_GUEST_<NAME>` (name upper-cased, `-` → `_`).
//!
//! Under CI (`CI` set, as `.ci/run` runs) every language's guests are required
//! (`build.sh --all`); elsewhere guests whose toolchain is missing are skipped and
//! the tests that need them fail with a message naming the installer.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_path_buf();
    for watched in ["plugins", "guest-sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CI");
    let mut build = Command::new("bash");
    build.arg(root.join("plugins/build.sh"));
    if std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()) {
        build.arg("--all");
    }
    let output = build
        // The outer cargo's settings are for the host target, not for guests.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cannot run bash plugins/build.sh");
    if !output.status.success() {
        panic!(
            "plugins/build.sh failed ({}); run it by hand to see why",
            output.status
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in stdout.lines().filter(|l| l.ends_with(".wasm")) {
        let path = PathBuf::from(line);
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let var = format!("WARDLOCK_GUEST_{}", stem.to_uppercase().replace('-', "_"));
        println!("cargo:rustc-env={var}={line}");
    }
}
