//! The `wardlock-ticket` binary (wardlock's command line with this engine
//! registered) runs guests on the ticket engine, and refuses bad settings of
//! it by name.

use std::process::Command;

use wardlock_conformance::KitGuest;

const BINARY: &str = env!("CARGO_BIN_EXE_wardlock-ticket");

/// Eight counter guests on the ticket engine, 25 increments each, under one
/// lock: the count is exact.
#[test]
fn a_guest_runs_on_the_ticket_engine_through_the_cli() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(BINARY)
        .args([
            "run",
            "--backend",
            "ticket",
            "--no-cache",
            "--instances",
            "8",
        ])
        .arg("--dir")
        .arg(format!("{}::/data", dir.path().display()))
        .arg(KitGuest::Counter.path())
        .args(["--", "ticket-demo", "25", "/data/count"])
        .env("WARDLOCK_LOG", "info")
        .output()
        .expect("run wardlock-ticket");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let count = std::fs::read_to_string(dir.path().join("count")).expect("count file");
    assert_eq!(count.trim(), "200", "{stderr}");
    assert!(
        stderr.contains("ticket"),
        "the run names its engine: {stderr}"
    );
}

/// The engine's own flag is checked by the engine, and `--backend` lists it.
#[test]
fn the_engine_checks_its_own_flag_and_is_listed() {
    let output = Command::new(BINARY)
        .args(["run", "--backend", "ticket", "--ticket-max-waiters", "0"])
        .arg(KitGuest::Counter.path())
        .output()
        .expect("run wardlock-ticket");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--ticket-max-waiters: must be at least 1"),
        "{stderr}"
    );

    let help = Command::new(BINARY)
        .args(["run", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("ticket") && help.contains("zookeeper"),
        "{help}"
    );
}
