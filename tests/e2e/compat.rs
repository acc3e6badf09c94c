//! Guests built against an older `wardlock:lock` keep running unchanged: a
//! `lockctl` binary built against 0.1.0 (`tests/fixtures/lockctl-0.1.0.wasm`)
//! and `lockctl2` binaries built against 0.2.0 and 0.2.1
//! (`tests/fixtures/lockctl2-0.2.0.wasm`, `lockctl2-0.2.1.wasm`, served by the
//! host's 0.2.2 through wasmtime's semver matching), never rebuilt, give, line
//! for line, what today's builds give on the same script, on a fresh
//! in-memory backend each.

use std::path::Path;
use std::sync::Arc;

use wardlock_host::runner::{Runner, RunnerConfig, Stdio};
use wardlock_host::{LockPolicy, MemoryBackend};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, assert_success, component, lines, runtime};

/// Every 0.1.0 call and error case the probe can make without another guest.
const SCRIPT: &[&str] = &[
    "acquire exclusive - orders",
    "token 1",
    "name 1",
    "mode 1",
    "status 1",
    "acquire exclusive 100 orders",
    "try shared orders",
    "acquire exclusive 5 other",
    "release 2",
    "release 2",
    "drop 1",
    "status 3",
    "release 3",
    "try exclusive orders",
    "acquire shared - catalog",
    "try exclusive catalog",
    "acquire exclusive - a/../b",
    "acquire shared - ",
    "try exclusive m/0",
    "release 42",
    "status 42",
    "until 5 held 10",
];

/// Every 0.2.0 call the probe can make without another guest.
const SCRIPT_0_2_0: &[&str] = &[
    "acquire x - orders",
    "status 1",
    "acquire x 50 orders",
    "many - x:a s:b",
    "async x - later",
    "race p1 1000",
    "get p1",
    "get p1",
    "revoke orders",
    "revoked 1",
    "release 1",
    "release 1",
    "permit 2 - pool",
    "permit 0 - pool",
    "many -",
    "acquire x - ../bad",
    "status 42",
];

async fn run(component: &wasmtime::component::Component, script: &[&str]) -> Vec<String> {
    let config = RunnerConfig {
        backend: Arc::new(MemoryBackend::new()),
        policy: Arc::new(LockPolicy::new()),
        timeout: Some(TEST_WAIT_LIMIT),
        stdio: Stdio::Capture,
        ..RunnerConfig::default()
    };
    let runner = Runner::new(runtime(), component, "lockctl.wasm", config).expect("runner");
    let args: Vec<String> = script.iter().map(|s| s.to_string()).collect();
    let report = runner.run(0, &args).await;
    assert_success(&report);
    lines(&report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_built_against_0_1_0_runs_unchanged() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lockctl-0.1.0.wasm");
    let frozen = runtime()
        .compile(&fixture)
        .expect("the 0.1.0 fixture loads");
    let old = run(&frozen, SCRIPT).await;
    let new = run(&component(Guest::Lockctl), SCRIPT).await;
    assert_eq!(old.len(), SCRIPT.len(), "{old:#?}");
    assert_eq!(old, new, "the 0.1.0 binary and today's build disagree");
    // And what they agree on is right.
    assert!(old[0].starts_with("h1 token="), "{old:?}");
    assert_eq!(old[2], "orders");
    assert_eq!((old[3].as_str(), old[4].as_str()), ("exclusive", "held"));
    assert!(old[6].starts_with("h3 token="), "downgrade: {old:?}");
    assert_eq!((old[8].as_str(), old[9].as_str()), ("ok", "err released"));
    assert!(old[16].starts_with("err invalid-name"), "{old:?}");
    assert!(old[18].starts_with("err invalid-name"), "{old:?}");
    assert_eq!(old[19], "err no-such-handle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_built_against_0_2_0_runs_unchanged_on_0_2_2() {
    same_as_today("fixtures/lockctl2-0.2.0.wasm").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_built_against_0_2_1_runs_unchanged_on_0_2_2() {
    same_as_today("fixtures/lockctl2-0.2.1.wasm").await;
}

/// The frozen `lockctl2` at `fixture` gives what today's build gives on
/// [`SCRIPT_0_2_0`], and that is right.
async fn same_as_today(fixture: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture);
    let frozen = runtime()
        .compile(&fixture)
        .unwrap_or_else(|e| panic!("the fixture {} loads: {e}", fixture.display()));
    let old = run(&frozen, SCRIPT_0_2_0).await;
    let new = run(&component(Guest::Lockctl2), SCRIPT_0_2_0).await;
    assert_eq!(old.len(), SCRIPT_0_2_0.len(), "{old:#?}");
    assert_eq!(
        old,
        new,
        "{}: the frozen binary and today's build disagree",
        fixture.display()
    );
    assert!(old[0].starts_with("h1 token="), "{old:?}");
    assert_eq!(old[1], "held");
    assert_eq!(old[3], "h3 h4", "{old:?}");
    assert_eq!((old[4].as_str(), old[5].as_str()), ("p1", "pending"));
    assert!(old[6].starts_with("h5 token="), "{old:?}");
    assert!(old[7].starts_with("err invalid-request"), "{old:?}");
    assert_eq!((old[8].as_str(), old[9].as_str()), ("asked 1", "true"));
    assert_eq!((old[10].as_str(), old[11].as_str()), ("ok", "err released"));
    assert!(old[13].starts_with("err invalid-request"), "{old:?}");
    assert!(old[14].starts_with("err invalid-request"), "{old:?}");
    assert!(old[15].starts_with("err invalid-name"), "{old:?}");
}
