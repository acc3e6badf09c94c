//! A guest's locks live exactly as long as the guest: return, exit, trap, deadline
//! (running or parked), embedder cancel and Store drop all release everything.

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::runner::{Outcome, RunnerConfig};
use wardlock_host::{LockBackend, LockPolicy, MemoryBackend, Mode, WardlockCtx};
use wardlock_tests::{
    Gated, Guest, TEST_WAIT_LIMIT, assert_outcome, hold, lines, lockctl, lockctl_with, name,
    runner, runner_with, spawn_acquire, spawn_lockctl, wait_counts,
};

/// Returning without releasing (or dropping) handles releases them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn return_releases_everything() {
    let backend = MemoryBackend::new();
    let report = lockctl(
        &backend,
        &[
            "acquire exclusive - a",
            "acquire shared - b",
            "acquire exclusive - a",
        ],
    )
    .await;
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert_eq!(lines(&report).len(), 3);
    assert_eq!(backend.active_names(), 0, "locks survived the guest");
}

/// Exiting with a non-zero code releases everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_releases_everything() {
    let backend = MemoryBackend::new();
    let report = lockctl(&backend, &["acquire exclusive - a", "exit 3"]).await;
    assert_outcome!(report, Outcome::Exit(_));
    assert_eq!(backend.active_names(), 0);
}

/// A guest that traps while holding `a` hands it to a native waiter queued behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trap_hands_lock_to_waiter() {
    let backend = MemoryBackend::new();
    // The guest holds `a` and waits for `gate`.
    let gated = Gated::park(
        &backend,
        &["acquire exclusive - a", "acquire exclusive - gate", "trap"],
    )
    .await;
    let waiter = spawn_acquire(backend.open_session("waiter"), "a", Mode::Exclusive);
    wait_counts(&backend, "a", 1, 1).await;
    let report = gated.open().await;
    assert_outcome!(report, Outcome::Trap(_));
    assert_eq!(lines(&report).last().map(String::as_str), Some("trapping"));
    let (_session, grant) = waiter.await.unwrap();
    assert!(grant.is_ok(), "waiter did not get the lock: {grant:?}");
    assert_eq!(backend.snapshot(&name("gate")).len(), 0);
}

/// A guest dropping its handle releases the lock while it keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_handle_releases_it() {
    let backend = MemoryBackend::new();
    let gated = Gated::park(
        &backend,
        &[
            "acquire exclusive - a",
            "drop 1",
            "acquire exclusive - gate",
        ],
    )
    .await;
    assert!(
        backend.snapshot(&name("a")).is_empty(),
        "dropped handle still holds the lock"
    );
    assert!(gated.open().await.outcome.is_success());
}

/// A guest spinning forever while holding a lock is stopped at its deadline and the
/// lock goes to the waiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_stops_a_spinning_holder() {
    let backend = MemoryBackend::new();
    let guest = {
        let backend = backend.clone();
        tokio::spawn(async move {
            let runner = runner(
                Guest::Misbehave,
                &backend,
                LockPolicy::new(),
                Some(Duration::from_millis(500)),
            );
            runner.run(0, &["spin-holding".into(), "a".into()]).await
        })
    };
    wait_counts(&backend, "a", 1, 0).await;
    let session = backend.open_session("waiter");
    let grant = session
        .acquire(&name("a"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await;
    assert!(grant.is_ok(), "{grant:?}");
    let report = guest.await.unwrap();
    assert_outcome!(report, Outcome::TimedOut(_));
}

/// A guest parked in `acquire` past its deadline is stopped; its held lock is
/// released and its queued request withdrawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_while_parked_withdraws_the_wait() {
    let backend = MemoryBackend::new();
    let (_native, _held) = hold(&backend, "busy", Mode::Exclusive).await;
    let report = lockctl_with(
        &backend,
        LockPolicy::new(),
        Some(Duration::from_millis(300)),
        &["acquire exclusive - mine", "acquire exclusive - busy"],
    )
    .await;
    assert_outcome!(report, Outcome::TimedOut(_));
    assert_eq!(lines(&report).len(), 1);
    assert!(backend.snapshot(&name("mine")).is_empty());
    let busy = backend.snapshot(&name("busy"));
    assert_eq!(
        busy.len(),
        1,
        "the timed-out waiter is still queued: {busy:?}"
    );
    assert_eq!(busy[0].owner, "test");
}

/// `queue-forever` (a guest waiting with no timeout) ends when its instance is
/// killed, leaving nothing queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_queued_leaves_nothing() {
    let backend = MemoryBackend::new();
    let (_native, _held) = hold(&backend, "a", Mode::Exclusive).await;
    let runner = runner(
        Guest::Misbehave,
        &backend,
        LockPolicy::new(),
        Some(Duration::from_millis(200)),
    );
    let report = runner.run(0, &["queue-forever".into(), "a".into()]).await;
    assert_outcome!(report, Outcome::TimedOut(_));
    assert_eq!(backend.snapshot(&name("a")).len(), 1);
}

/// The embedder dropping the `run` future (cancel) releases held locks and
/// withdraws the parked request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedder_cancel_releases_everything() {
    let backend = MemoryBackend::new();
    let (_native, _held) = hold(&backend, "busy", Mode::Exclusive).await;
    let guest = spawn_lockctl(
        &backend,
        &[
            "acquire exclusive - mine",
            "acquire shared - other",
            "acquire exclusive - busy",
        ],
    );
    wait_counts(&backend, "busy", 1, 1).await;
    assert_eq!(backend.snapshot(&name("mine")).len(), 1);
    guest.abort();
    assert!(guest.await.unwrap_err().is_cancelled());
    assert!(backend.snapshot(&name("mine")).is_empty());
    assert!(backend.snapshot(&name("other")).is_empty());
    assert_eq!(backend.snapshot(&name("busy")).len(), 1);
}

/// Dropping a Store whose data holds a `WardlockCtx` releases its locks, without
/// any resource destructor running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_drop_releases_everything() {
    let backend = MemoryBackend::new();
    let ctx = WardlockCtx::new(&backend, Arc::new(LockPolicy::new()), "embedder#1");
    let mut store = wasmtime::Store::new(wardlock_tests::runtime().wasm_engine(), ctx);
    let first = store
        .data_mut()
        .acquire("a", Mode::Exclusive, None)
        .await
        .unwrap();
    let _second = store
        .data_mut()
        .acquire("b", Mode::Shared, None)
        .await
        .unwrap();
    assert!(!first.is_released());
    assert_eq!(backend.active_names(), 2);
    drop(store);
    assert_eq!(backend.active_names(), 0);
}

/// A guest growing memory without bound traps at the memory limit and loses its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_traps_and_releases() {
    let backend = MemoryBackend::new();
    let runner = runner_with(
        Guest::Misbehave,
        RunnerConfig {
            backend: Arc::new(backend.clone()),
            memory_limit: 32 << 20,
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let report = runner.run(0, &["memory-bomb".into(), "a".into()]).await;
    assert_outcome!(report, Outcome::Trap(_));
    assert!(report.stdout_text().contains("holding token="));
    assert_eq!(backend.active_names(), 0);
}
