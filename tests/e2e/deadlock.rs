//! Wait-for cycles among the guests of one host (issue 40), through real
//! `lockctl` guests on the memory engine: an AB/BA cycle is broken at once
//! (the closing wait gets `would-deadlock`, the other guest proceeds), and
//! waits that converge on one lock are never flagged.

use std::sync::Arc;
use std::time::Instant;

use wardlock_host::backend::LockBackend;
use wardlock_host::backend::memory::MemoryBackend;
use wardlock_host::locks::LockTable;
use wardlock_host::runner::{Runner, RunnerConfig};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, runner_with, spawn_run, wait_counts};

/// A `lockctl` runner on `backend`, its instances tracked in `table`.
fn tracked_runner(backend: &MemoryBackend, table: &LockTable) -> Arc<Runner> {
    let backend: Arc<dyn LockBackend> = Arc::new(backend.clone());
    runner_with(
        Guest::Lockctl,
        RunnerConfig {
            backend,
            locks: Some(table.clone()),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    )
}

#[tokio::test]
async fn deadlock_ab_ba_between_two_guests_is_broken_at_once() {
    let backend = MemoryBackend::new();
    let table = LockTable::new("e2e");
    let runner = tracked_runner(&backend, &table);
    // A takes `a`, dawdles (until its handle is released, which it never
    // is: a 1 s sleep), then asks for `b`.
    let first = spawn_run(
        &runner,
        0,
        &[
            "acquire exclusive - a",
            "until 1 released 1000",
            "acquire exclusive - b",
        ],
    );
    wait_counts(&backend, "a", 1, 0).await;
    // B takes `b` and waits for `a`: the older wait of the cycle.
    let second = spawn_run(
        &runner,
        1,
        &[
            "acquire exclusive - b",
            "acquire exclusive - a",
            "release 2",
            "release 1",
        ],
    );
    wait_counts(&backend, "a", 1, 1).await;

    // A's wait for `b` closes the cycle: it is the youngest, refused at once.
    let mut changes = table.changes();
    let found = tokio::time::timeout(TEST_WAIT_LIMIT, async {
        loop {
            if !table.snapshot(None).cycles.is_empty() {
                return Instant::now();
            }
            changes.changed().await.expect("the table lives");
        }
    })
    .await
    .expect("the cycle was found");
    let loser = first.await.expect("no panic");
    let delay = found.elapsed();
    let out = loser.stdout_text();
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("err would-deadlock")),
        "A: {out}"
    );
    let winner = second.await.expect("no panic");
    let out = winner.stdout_text();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "B: {out}");
    assert!(
        lines[1].starts_with("h2 token="),
        "B gets `a` once A is gone: {out}"
    );

    let snapshot = table.snapshot(None);
    let cycle = &snapshot.cycles[0];
    assert_eq!(cycle.scope, "host");
    assert_eq!(cycle.broken.as_deref(), Some("lockctl.wasm#0"));
    let mut locks = cycle.locks.clone();
    locks.sort();
    assert_eq!(locks, ["a", "b"]);
    assert!(
        snapshot.locks.is_empty(),
        "both guests ended: {:?}",
        snapshot.locks
    );
    eprintln!("deadlock: the loser's instance ended {delay:?} after the cycle was found");
}

#[tokio::test]
async fn deadlock_converging_waits_are_never_flagged() {
    let backend = MemoryBackend::new();
    let table = LockTable::new("e2e");
    let runner = tracked_runner(&backend, &table);
    let holder = spawn_run(
        &runner,
        0,
        &["acquire exclusive - x", "until 1 released 500", "release 1"],
    );
    wait_counts(&backend, "x", 1, 0).await;
    // Three guests each hold a lock of their own and wait for x.
    let waiters: Vec<_> = (1..=3)
        .map(|i| {
            let own = format!("acquire exclusive - own{i}");
            spawn_run(
                &runner,
                i,
                &[
                    own.as_str(),
                    "acquire exclusive - x",
                    "release 2",
                    "release 1",
                ],
            )
        })
        .collect();
    wait_counts(&backend, "x", 1, 3).await;
    assert!(table.snapshot(None).cycles.is_empty());
    let out = holder.await.expect("no panic").stdout_text();
    assert!(out.ends_with("ok\n"), "holder: {out}");
    for waiter in waiters {
        let out = waiter.await.expect("no panic").stdout_text();
        assert!(!out.contains("err"), "waiter: {out}");
    }
    let snapshot = table.snapshot(None);
    assert!(snapshot.cycles.is_empty(), "{:?}", snapshot.cycles);
    assert_eq!(snapshot.cycles_found, 0);
}
