//! With the `guests` feature (the default), builds the three guests the kit's
//! guest checks run (`counter` and `lockctl`, on `wardlock:lock` 0.2.2 and
//! 0.1.0, and `lockctl3`, a WASI 0.3 command on 0.3.0: Rust guests of
//! `plugins/`) and writes `$OUT_DIR/guests.rs` with their paths. Outside this
//! repository (no `plugins/build.sh` beside the kit), set
//! `WARDLOCK_CONFORMANCE_GUESTS` to a directory holding `counter.wasm`,
//! `lockctl.wasm` and `lockctl3.wasm` instead.

#![allow(
    clippy::expect_used,
    reason = "a build script: a panic is how it fails the build, with its message"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

const GUESTS: [&str; 3] = ["counter", "lockctl", "lockctl3"];

fn main() {
    // Without the `guests` feature no check runs a guest: nothing to build.
    if std::env::var_os("CARGO_FEATURE_GUESTS").is_none() {
        println!("cargo:rerun-if-changed=build.rs");
        return;
    }
    println!("cargo:rerun-if-env-changed=WARDLOCK_CONFORMANCE_GUESTS");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let paths: Vec<String> = match std::env::var_os("WARDLOCK_CONFORMANCE_GUESTS") {
        Some(dir) => GUESTS
            .iter()
            .map(|g| {
                Path::new(&dir)
                    .join(format!("{g}.wasm"))
                    .display()
                    .to_string()
            })
            .collect(),
        None => build_in_repository(),
    };
    let table: String = GUESTS
        .iter()
        .zip(&paths)
        .map(|(name, path)| format!("({name:?}, {path:?}),\n"))
        .collect();
    std::fs::write(out.join("guests.rs"), format!("[\n{table}]")).expect("write guests.rs");
}

/// Runs `plugins/build.sh --rust-only counter lockctl lockctl3` and returns the paths
/// it prints, in `GUESTS` order.
fn build_in_repository() -> Vec<String> {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest.join("../..");
    let script = root.join("plugins/build.sh");
    if !script.is_file() {
        panic!(
            "wardlock-conformance: no plugins/build.sh at {}: set WARDLOCK_CONFORMANCE_GUESTS to a directory with counter.wasm, lockctl.wasm and lockctl3.wasm",
            script.display()
        );
    }
    for watched in [
        "plugins/counter",
        "plugins/lockctl",
        "plugins/lockctl3",
        "guest-sdk",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let output = Command::new("bash")
        .arg(&script)
        .arg("--rust-only")
        .args(GUESTS)
        // The outer cargo's settings are for the host target, not for guests.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cannot run bash plugins/build.sh");
    assert!(
        output.status.success(),
        "plugins/build.sh failed ({}); run it by hand to see why",
        output.status
    );
    let printed = String::from_utf8(output.stdout).expect("plugins/build.sh prints UTF-8 paths");
    GUESTS
        .iter()
        .map(|g| {
            printed
                .lines()
                .find(|p| Path::new(p).file_stem().is_some_and(|s| s == *g))
                .unwrap_or_else(|| panic!("plugins/build.sh made no {g}.wasm"))
                .to_owned()
        })
        .collect()
}
