//! The environment a test gives the cargo it runs (to build the host binary,
//! or as a command of the book), so that build reuses the test build.
//!
//! Cargo and nextest give a test process the variables of the test's own
//! package (`CARGO_PKG_NAME=wardlock-tests`, `CARGO_MANIFEST_DIR`, …). Some
//! build scripts ask to be run again when such a variable changes (ring's
//! names `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`, read from the
//! environment cargo itself was started in), so a cargo started from a test
//! judged ring stale, built it again with rustls and all above them (21
//! crates), and the next build outside the tests (`cargo test --doc`) built
//! them once more.

use std::process::Command;

/// The prefixes of the variables cargo sets for a package's own processes.
const PACKAGE_VARIABLES: &[&str] = &[
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "OUT_DIR",
];

/// Removes from `command` the variables cargo set for this test's package.
pub fn without_package_variables(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let Some(text) = name.to_str() else {
            continue;
        };
        if PACKAGE_VARIABLES.iter().any(|p| text.starts_with(p)) {
            command.env_remove(&name);
        }
    }
    command
}
