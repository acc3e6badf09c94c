//! Wait-for cycles (issue 40). Among the guests of one host, through real
//! `lockctl2` guests on the memory engine: an AB/BA cycle is broken at once
//! (the closing wait gets `would-deadlock`, the other guest proceeds), and
//! waits that converge on one lock are never flagged. Across two hosts on a
//! real ZooKeeper: the cycle is reported (not broken) by the background scan
//! within its documented bound.
//!
//! No sleeps: a guest that must not go on yet runs `wait-file /data/go`, and
//! the test creates that file only once it has seen the other guest queued.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::backend::memory::MemoryBackend;
use wardlock_host::backend::{LockBackend, LockSession};
use wardlock_host::locks::remote::SCAN_EVERY;
use wardlock_host::locks::{Cycle, LockTable};
use wardlock_host::runner::{Preopen, Runner, RunnerConfig};
use wardlock_host::{LockName, Mode};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, name, runner_with, spawn_run, wait_counts};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

/// The command that holds a guest until the test lets it go on.
const WAIT_FOR_GO: &str = "wait-file /data/go";

/// A `lockctl2` runner on `backend`, its instances tracked in `table`, with
/// `dir` as the guests' `/data`.
fn tracked_runner(backend: &MemoryBackend, table: &LockTable, dir: &Path) -> Arc<Runner> {
    let backend: Arc<dyn LockBackend> = Arc::new(backend.clone());
    runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend,
            locks: Some(table.clone()),
            preopens: vec![Preopen::parse(&format!("{}::/data", dir.display()))],
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    )
}

/// Lets every guest waiting in [`WAIT_FOR_GO`] go on.
fn go(dir: &Path) {
    std::fs::write(dir.join("go"), "").expect("write the go-ahead");
}

#[tokio::test]
async fn deadlock_ab_ba_between_two_guests_is_broken_at_once() {
    let backend = MemoryBackend::new();
    let table = LockTable::new("e2e");
    let dir = tempfile::tempdir().expect("temp dir");
    let runner = tracked_runner(&backend, &table, dir.path());
    // A takes `a`, waits for the go-ahead, then asks for `b`.
    let first = spawn_run(&runner, 0, &["acquire x - a", WAIT_FOR_GO, "acquire x - b"]);
    wait_counts(&backend, "a", 1, 0).await;
    // B takes `b` and waits for `a`: the older wait of the cycle.
    let second = spawn_run(
        &runner,
        1,
        &["acquire x - b", "acquire x - a", "release 2", "release 1"],
    );
    wait_counts(&backend, "a", 1, 1).await;
    // B is queued (its wait is in the table before the engine sees it, and
    // its hold of `b` before it asked for `a`): now A may close the cycle.
    let mut changes = table.changes();
    assert!(table.snapshot(None).cycles.is_empty());
    go(dir.path());

    // A's wait for `b` closes the cycle: it is the youngest, refused at once.
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
    let loser = tokio::time::timeout(TEST_WAIT_LIMIT, first)
        .await
        .expect("A ends")
        .expect("no panic");
    let delay = found.elapsed();
    let out = loser.stdout_text();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "A: {out}");
    assert_eq!(lines[1], "file", "A: {out}");
    assert!(lines[2].starts_with("err would-deadlock"), "A: {out}");
    let winner = tokio::time::timeout(TEST_WAIT_LIMIT, second)
        .await
        .expect("B ends")
        .expect("no panic");
    let out = winner.stdout_text();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "B: {out}");
    assert!(
        lines[1].starts_with("h2 token="),
        "B gets `a` once A is gone: {out}"
    );
    assert_eq!(lines[2..], ["ok", "ok"], "B: {out}");

    let snapshot = table.snapshot(None);
    assert_eq!(snapshot.cycles.len(), 1, "{:?}", snapshot.cycles);
    let cycle = &snapshot.cycles[0];
    assert_eq!(cycle.scope, "host");
    assert_eq!(cycle.broken.as_deref(), Some("lockctl2.wasm#0"));
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
    let dir = tempfile::tempdir().expect("temp dir");
    let runner = tracked_runner(&backend, &table, dir.path());
    let holder = spawn_run(&runner, 0, &["acquire x - x", WAIT_FOR_GO, "release 1"]);
    wait_counts(&backend, "x", 1, 0).await;
    // Three guests each hold a lock of their own and wait for x.
    let waiters: Vec<_> = (1..=3)
        .map(|i| {
            let own = format!("acquire x - own{i}");
            spawn_run(
                &runner,
                i,
                &[own.as_str(), "acquire x - x", "release 2", "release 1"],
            )
        })
        .collect();
    wait_counts(&backend, "x", 1, 3).await;
    assert!(table.snapshot(None).cycles.is_empty());
    go(dir.path());
    let out = tokio::time::timeout(TEST_WAIT_LIMIT, holder)
        .await
        .expect("the holder ends")
        .expect("no panic")
        .stdout_text();
    assert!(out.ends_with("file\nok\n"), "holder: {out}");
    for waiter in waiters {
        let out = tokio::time::timeout(TEST_WAIT_LIMIT, waiter)
            .await
            .expect("a waiter ends")
            .expect("no panic")
            .stdout_text();
        assert!(!out.contains("err"), "waiter: {out}");
        assert_eq!(out.lines().count(), 4, "waiter: {out}");
    }
    let snapshot = table.snapshot(None);
    assert!(snapshot.cycles.is_empty(), "{:?}", snapshot.cycles);
    assert_eq!(snapshot.cycles_found, 0);
    assert!(snapshot.locks.is_empty(), "{:?}", snapshot.locks);
}

/// Host `n`'s ZooKeeper backend on `server` under `root`, described as
/// `host-<n>` in its nodes' data.
async fn zk_host(server: &ZkServer, root: &str, n: u32, handoff: bool) -> Arc<dyn LockBackend> {
    let mut config = ZooKeeperConfig::new(server.address()).root(root);
    config.host_description = format!("host-{n}");
    if handoff {
        config = config.local_handoff(LocalHandoff::default());
    }
    Arc::new(ZooKeeperBackend::connect(config).await.expect("backend"))
}

/// The first cross-host cycle in `table`'s snapshot.
fn across(table: &LockTable) -> Option<Cycle> {
    table
        .snapshot(None)
        .cycles
        .into_iter()
        .find(|c| c.scope == "hosts")
}

/// Whether `table` shows a waiter for `lock`.
fn waits_for(table: &LockTable, lock: &str) -> bool {
    table
        .snapshot(None)
        .locks
        .iter()
        .any(|l| l.name == lock && !l.waiters.is_empty())
}

/// Waits (at most [`TEST_WAIT_LIMIT`]) on `table`'s changes until `done`.
async fn until(table: &LockTable, what: &str, mut done: impl FnMut(&LockTable) -> bool) {
    let mut changes = table.changes();
    tokio::time::timeout(TEST_WAIT_LIMIT, async {
        while !done(table) {
            changes.changed().await.expect("the table lives");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{}: never {what}", table.host()));
}

/// Session 1 on host 1 holds x, session 2 on host 2 holds y; then 1 waits
/// for y and 2 for x. Neither table sees a cycle of its own (each holds one
/// side), so nothing is broken; the background scan of the engine's
/// contenders must report it (`scope: "hosts"`, `broken: None`) within its
/// bound. Releasing x ends both waits, and nothing is left in either table.
async fn cycle_across_hosts(server: &ZkServer, handoff: bool) {
    let root = if handoff {
        "/deadlock-handoff"
    } else {
        "/deadlock-own"
    };
    let (one, two) = (LockTable::new("h1"), LockTable::new("h2"));
    let b1 = one.wrap(zk_host(server, root, 1, handoff).await);
    let b2 = two.wrap(zk_host(server, root, 2, handoff).await);
    let (x, y): (LockName, LockName) = (name("x"), name("y"));
    let s1: Arc<dyn LockSession> = Arc::from(b1.open_session("guest-1"));
    let s2: Arc<dyn LockSession> = Arc::from(b2.open_session("guest-2"));
    let x1 = s1
        .acquire(&x, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("1 takes x");
    let y2 = s2
        .acquire(&y, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("2 takes y");

    let mut changes = (one.changes(), two.changes());
    let wait1 = tokio::spawn({
        let (s1, y) = (s1.clone(), y.clone());
        async move { s1.acquire(&y, Mode::Exclusive, Some(TEST_WAIT_LIMIT)).await }
    });
    let wait2 = tokio::spawn({
        let (s2, x) = (s2.clone(), x.clone());
        async move { s2.acquire(&x, Mode::Exclusive, Some(TEST_WAIT_LIMIT)).await }
    });
    // Both waits are in their tables (each is recorded just before it is
    // queued on the engine): the cycle closes now, give or take a round
    // trip to ZooKeeper.
    until(&one, "waits for y", |t| waits_for(t, "y")).await;
    until(&two, "waits for x", |t| waits_for(t, "x")).await;
    let closed = Instant::now();
    // The bound: one scan period plus one round of `contenders` calls (two
    // locks here, a few milliseconds each), with margin for a loaded machine.
    let bound = SCAN_EVERY + Duration::from_secs(4);
    let (table, cycle) = tokio::time::timeout(bound, async {
        loop {
            for table in [&one, &two] {
                if let Some(cycle) = across(table) {
                    return (table.host().to_owned(), cycle);
                }
            }
            tokio::select! {
                changed = changes.0.changed() => changed.expect("table 1 lives"),
                changed = changes.1.changed() => changed.expect("table 2 lives"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no cycle across hosts reported within {bound:?} (handoff {handoff}): \
             h1 {:?}, h2 {:?}",
            one.snapshot(None),
            two.snapshot(None)
        )
    });
    let delay = closed.elapsed();
    assert_eq!(cycle.broken, None, "{table}: {cycle:?}");
    assert_eq!(cycle.parties.len(), 2, "{table}: {cycle:?}");
    let mut hosts: Vec<&str> = cycle
        .parties
        .iter()
        .map(|p| p.split_whitespace().next().unwrap_or_default())
        .collect();
    hosts.sort_unstable();
    assert_eq!(hosts, ["host-1", "host-2"], "{table}: {cycle:?}");
    let mut locks = cycle.locks.clone();
    locks.sort();
    assert_eq!(locks, ["x", "y"], "{table}: {cycle:?}");
    // Reported, not broken: both waits are still there.
    assert!(!wait1.is_finished() && !wait2.is_finished());
    assert!(waits_for(&one, "y") && waits_for(&two, "x"));
    for t in [&one, &two] {
        let snapshot = t.snapshot(None);
        assert!(
            snapshot.cycles.iter().all(|c| c.scope == "hosts"),
            "{}: nothing local to break: {:?}",
            t.host(),
            snapshot.cycles
        );
    }

    // 1 gives up x: 2 gets it, then lets go of both; then 1 gets y.
    s1.release(x1.id).expect("1 releases x");
    let x2 = tokio::time::timeout(TEST_WAIT_LIMIT, wait2)
        .await
        .expect("2's wait ends")
        .expect("no panic")
        .expect("2 gets x");
    s2.release(x2.id).expect("2 releases x");
    s2.release(y2.id).expect("2 releases y");
    let y1 = tokio::time::timeout(TEST_WAIT_LIMIT, wait1)
        .await
        .expect("1's wait ends")
        .expect("no panic")
        .expect("1 gets y");
    s1.release(y1.id).expect("1 releases y");
    drop((s1, s2));
    for t in [&one, &two] {
        let snapshot = t.snapshot(None);
        assert!(
            snapshot.locks.is_empty(),
            "{}: {:?}",
            t.host(),
            snapshot.locks
        );
        assert!(snapshot.cycles_found <= 1, "{}: {snapshot:?}", t.host());
    }
    b1.shutdown().await;
    b2.shutdown().await;
    eprintln!(
        "deadlock across hosts (handoff {handoff}): reported by {table} {delay:?} after both waits were tracked"
    );
}

#[tokio::test]
async fn deadlock_across_two_hosts_is_reported_within_the_bound() {
    let server = ZkServer::start();
    // Each guest queues on its own (the library's default), then through
    // host-local hand-off (`wardlock run`/`serve`'s): there the nodes' data
    // names the host, so the remote party is the whole host.
    cycle_across_hosts(&server, false).await;
    cycle_across_hosts(&server, true).await;
}
