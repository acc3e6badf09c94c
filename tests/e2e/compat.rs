//! Guests built against an older `wardlock:lock` keep running unchanged: a
//! `lockctl` binary built against 0.1.0 (`tests/fixtures/lockctl-0.1.0.wasm`,
//! never rebuilt) gives, line for line, what today's `lockctl` build gives on
//! the same script, on a fresh in-memory backend each.

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

async fn run(component: &wasmtime::component::Component) -> Vec<String> {
    let config = RunnerConfig {
        backend: Arc::new(MemoryBackend::new()),
        policy: Arc::new(LockPolicy::new()),
        timeout: Some(TEST_WAIT_LIMIT),
        stdio: Stdio::Capture,
        ..RunnerConfig::default()
    };
    let runner = Runner::new(runtime(), component, "lockctl.wasm", config).expect("runner");
    let args: Vec<String> = SCRIPT.iter().map(|s| s.to_string()).collect();
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
    let old = run(&frozen).await;
    let new = run(&component(Guest::Lockctl)).await;
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
