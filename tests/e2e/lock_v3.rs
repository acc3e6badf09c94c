//! `wardlock:lock@0.3.0` through a WASI 0.3 command built against it
//! (`lockctl3`: its `run` is an `async func`, its lock calls are awaited), on
//! the in-memory backend: exclusion with 0.2.2 guests on one lock, many waits
//! of one instance at once, cancelling a wait by dropping it, the instance's
//! end (the deadline) while calls are pending, and the handle cap against
//! ten thousand calls at once; a lock's loss and release through its
//! `not-held` future. On ZooKeeper: 0.3 and 0.2.2 guests of two hosts on
//! one lock. (The kit's `guest_v3_*` checks run the 0.3 guest on every
//! engine, memory included: `conformance.rs`; a trap with calls pending is
//! its `guest_v3_trap_leaves_nothing`.)

use std::sync::Arc;

use wardlock_host::backend::memory::Fault;
use wardlock_host::runner::Outcome;
use wardlock_host::{LockBackend, LockPolicy, MemoryBackend, Mode};
use wardlock_tests::conformance::Probe;
use wardlock_tests::probe::ZkProbe;
use wardlock_tests::zookeeper::{ZkServer, backend_under};
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_outcome, assert_success, hold, lines, name, runner, runner_in,
    spawn_run, value_in, wait_counts,
};

/// Two 0.3 guests (the probe, and `counter3` on the SDK's 0.3 API) and two
/// 0.2.2 guests (the `counter` example, on the SDK's 0.2.2 API) add one to
/// one file under one lock, 50 times each: no update is lost, so the
/// versions exclude each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_and_v2_guests_exclude_each_other() {
    let backend = MemoryBackend::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = Arc::new(backend.clone());
    let v3 = runner_in(
        Guest::Lockctl3,
        shared.clone(),
        dir.path(),
        Some(TEST_WAIT_LIMIT),
    );
    let sdk3 = runner_in(
        Guest::Counter3,
        shared.clone(),
        dir.path(),
        Some(TEST_WAIT_LIMIT),
    );
    let v2 = runner_in(Guest::Counter, shared, dir.path(), Some(TEST_WAIT_LIMIT));
    let tasks = [
        spawn_run(&v3, 0, &["counter", "count", "50", "/data/n"]),
        spawn_run(&v2, 1, &["count", "50", "/data/n"]),
        spawn_run(&sdk3, 2, &["count", "50", "/data/n"]),
        spawn_run(&v2, 3, &["count", "50", "/data/n"]),
    ];
    for task in tasks {
        assert_success(&task.await.expect("guest task"));
    }
    assert_eq!(value_in(dir.path(), "n"), 200, "no lost update");
    assert_eq!(backend.active_names(), 0);
}

/// One instance awaits 64 locks at once (one task, `join_all`). The first is
/// held elsewhere: the other 63 are granted while it waits, which a host
/// that served the calls one after another could not do; once it is
/// released, all 64 are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_waits_on_many_locks_at_once() {
    let backend = MemoryBackend::new();
    let (native, first) = hold(&backend, "m/l0", Mode::Exclusive).await;
    let guest = lockctl3(&backend);
    let run = spawn_run(&guest, 0, &["many", "64", "m"]);
    wait_counts(&backend, "m/l0", 1, 1).await;
    for i in 1..64 {
        wait_counts(&backend, &format!("m/l{i}"), 1, 0).await;
    }
    native.release(first.id).expect("release m/l0");
    let report = run.await.expect("guest task");
    assert_success(&report);
    assert_eq!(lines(&report), ["many: 64 granted"]);
    assert_eq!(backend.active_names(), 0);
}

/// A guest awaits `c` (held elsewhere) and `d` (free) at once, and drops the
/// wait for `c` once it has `d`: `contenders`, asked by the guest right
/// after, shows no waiter of its own on `c`, and neither does the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_leaves_nothing_queued() {
    let backend = MemoryBackend::new();
    let (native, blocker) = hold(&backend, "c", Mode::Exclusive).await;
    let guest = lockctl3(&backend);
    let report = spawn_run(&guest, 0, &["cancel", "c", "d"])
        .await
        .expect("guest task");
    assert_success(&report);
    assert_eq!(
        lines(&report),
        ["cancel: d first; c has 1 holders and 0 waiters"]
    );
    let queue = backend.snapshot(&name("c"));
    assert_eq!(queue.len(), 1, "only the native holder: {queue:?}");
    assert_eq!(queue[0].owner, "test");
    native.release(blocker.id).expect("release c");
    assert_eq!(backend.active_names(), 0);
}

/// An instance stopped by its deadline while 10 of its calls wait (5 on each
/// of two names held elsewhere) and it holds 5 locks: the moment the run
/// returns, nothing of it is held or queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_ends_pending_calls_and_held_locks() {
    let backend = MemoryBackend::new();
    let (native, p) = hold(&backend, "p", Mode::Exclusive).await;
    let q = native
        .acquire(&name("q"), Mode::Exclusive, None)
        .await
        .expect("q");
    let deadline = std::time::Duration::from_millis(1500);
    let guest = runner(Guest::Lockctl3, &backend, LockPolicy::new(), Some(deadline));
    let report = spawn_run(&guest, 0, &["pending-end", "5", "5", "p", "q"])
        .await
        .expect("guest task");
    assert_outcome!(report, Outcome::TimedOut(_));
    assert_eq!(lines(&report), ["waiting: 5 held, 10 pending"]);
    for lock in ["p", "q"] {
        let queue = backend.snapshot(&name(lock));
        assert_eq!(queue.len(), 1, "{lock}: only the native holder: {queue:?}");
    }
    assert_eq!(backend.active_names(), 2, "the guest's 5 locks are gone");
    native.release(p.id).expect("release p");
    native.release(q.id).expect("release q");
}

/// Ten thousand calls at once from one instance: the handle cap (1024 by
/// default) refuses the rest with `limit-exceeded`, naming the cap, and
/// nothing is left held or queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_meet_the_handle_cap() {
    let backend = MemoryBackend::new();
    let guest = lockctl3(&backend);
    let report = spawn_run(&guest, 0, &["many", "10000", "big"])
        .await
        .expect("guest task");
    assert_outcome!(report, Outcome::Exit(1));
    let stderr = report.stderr_text();
    assert!(
        stderr.contains("many: 1024 granted, 8976 refused, first: Error::LimitExceeded(")
            && stderr.contains("1024 handles"),
        "{stderr}"
    );
    assert_eq!(backend.active_names(), 0);
}

/// Open `not-held` futures are bounded by the handle cap (1024 by
/// default): a guest keeping 1024 is served, one keeping 1025 traps with a
/// message naming the bound, and a guest dropping each future at once takes
/// 5000 in turn (a dropped future no longer counts). Nothing stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_not_held_futures_meet_the_handle_cap() {
    let backend = MemoryBackend::new();
    let guest = lockctl3(&backend);
    let at_cap = spawn_run(&guest, 0, &["futures", "f", "1024", "keep"]);
    let at_cap = at_cap.await.expect("guest task");
    assert_success(&at_cap);
    assert_eq!(lines(&at_cap), ["futures: 1024 kept"]);
    let over = spawn_run(&guest, 1, &["futures", "f", "1025", "keep"]);
    let over = over.await.expect("guest task");
    match &over.outcome {
        Outcome::Trap(why) => assert!(
            why.contains("1024 open not-held and revoked futures"),
            "{why}"
        ),
        other => panic!("expected a trap naming the bound, got {other:?}"),
    }
    let dropped = spawn_run(&guest, 2, &["futures", "f", "5000", "drop"]);
    let dropped = dropped.await.expect("guest task");
    assert_success(&dropped);
    assert_eq!(lines(&dropped), ["futures: 5000 dropped"]);
    assert_eq!(backend.active_names(), 0);
}

/// `lock.not-held` is a future the host completes: with `lost` when the
/// guest's session expires while it awaits (set up before the fault: the
/// guest holds `parked` only once it has the future), and with `released`
/// when the guest releases the handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_held_completes_on_loss_and_on_release() {
    let backend = MemoryBackend::new();
    let (_guest, run) = parked(&backend, &["watch", "w"]).await;
    let owner = backend.snapshot(&name("w"))[0].owner.clone();
    assert_eq!(backend.inject(&owner, Fault::Expire), 1);
    let report = run.await.expect("guest task");
    assert_success(&report);
    assert_eq!(
        lines(&report),
        [
            "not-held: Status::Lost",
            "release: Err(Error::Lost)",
            "after release: Status::Released"
        ]
    );
    assert_eq!(backend.active_names(), 0);
}

/// Two hosts on one ZooKeeper server (two backends, each its own sessions,
/// a node per guest): 0.3 guests on one (the probe and `counter3`), 0.2.2
/// `counter`s on the other, 25 additions each under one lock, counted
/// exactly; no lock node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_and_v2_guests_of_two_hosts_exclude_each_other_on_zookeeper() {
    let server = ZkServer::start();
    let root = "/wardlock-v3";
    let (one, other) = (
        backend_under(&server, root, false).await,
        backend_under(&server, root, false).await,
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let limit = Some(TEST_WAIT_LIMIT);
    let probe_guest = runner_in(Guest::Lockctl3, Arc::new(one.clone()), dir.path(), limit);
    let sdk_guest = runner_in(Guest::Counter3, Arc::new(one), dir.path(), limit);
    let v2 = runner_in(Guest::Counter, Arc::new(other), dir.path(), limit);
    let tasks = [
        spawn_run(&probe_guest, 0, &["counter", "v3/count", "25", "/data/n"]),
        spawn_run(&v2, 0, &["v3/count", "25", "/data/n"]),
        spawn_run(&sdk_guest, 1, &["v3/count", "25", "/data/n"]),
        spawn_run(&v2, 1, &["v3/count", "25", "/data/n"]),
    ];
    for task in tasks {
        assert_success(&task.await.expect("guest task"));
    }
    assert_eq!(value_in(dir.path(), "n"), 100, "no lost update");
    let probe = ZkProbe::connect(&server.address(), root).await;
    probe.wait_len("v3/count", 0).await;
}

/// Semaphore permits through 0.3.0: a guest awaits 3 permits of a
/// 3-permit semaphore at once while a native holder has one: 2 are granted
/// while the third waits (the guest's calls wait side by side), then all 3
/// once the native permit goes; a permit's `not-held` future completes with
/// `released` when the guest releases it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_awaited_side_by_side() {
    let backend = MemoryBackend::new();
    let native = backend.open_session("test");
    let held = native
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&name("sem"), 3, None)
        .await
        .expect("native permit");
    let guest = lockctl3(&backend);
    let run = spawn_run(&guest, 0, &["permits", "sem", "3", "3"]);
    wait_counts(&backend, "sem", 3, 1).await;
    native.release(held.id).expect("release the native permit");
    let report = run.await.expect("guest task");
    assert_success(&report);
    assert_eq!(
        lines(&report),
        [
            "permits: 3 granted, tokens rising",
            "first after release: Status::Released"
        ]
    );
    assert_eq!(backend.active_names(), 0);
}

/// `acquire-many` through 0.3.0: two instances take the same three locks as
/// one request, listed in opposite orders, 100 times each, adding one to a
/// file under them: both finish (no deadlock) and no update is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_in_opposite_orders_never_deadlock() {
    let backend = MemoryBackend::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let guest = runner_in(
        Guest::Lockctl3,
        Arc::new(backend.clone()),
        dir.path(),
        Some(TEST_WAIT_LIMIT),
    );
    let forward = spawn_run(
        &guest,
        0,
        &["many-loop", "100", "/data/n", "x/a", "x/b", "x/c"],
    );
    let backward = spawn_run(
        &guest,
        1,
        &["many-loop", "100", "/data/n", "x/c", "x/b", "x/a"],
    );
    for task in [forward, backward] {
        let report = task.await.expect("guest task");
        assert_success(&report);
        assert_eq!(lines(&report), ["many-loop: 100"]);
    }
    assert_eq!(value_in(dir.path(), "n"), 200, "no lost update");
    assert_eq!(backend.active_names(), 0);
}

/// A cancelled `acquire-many` releases what it took and withdraws its
/// wait, while the guest lives on. With `b` held elsewhere, the guest's set
/// holds `a` and waits for `b` (seen on the engine) when `other`, which it
/// awaits beside, is granted and it drops the set: `a` is released and
/// nothing of the guest stays on `b` or `c`, seen while the guest waits at
/// a gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_many_releases_what_it_took() {
    let backend = MemoryBackend::new();
    let (native, b) = hold(&backend, "s/b", Mode::Exclusive).await;
    let mut held = Vec::new();
    for lock in ["gate", "other"] {
        held.push(
            native
                .acquire(&name(lock), Mode::Exclusive, None)
                .await
                .expect("native hold"),
        );
    }
    let guest = lockctl3(&backend);
    let run = spawn_run(
        &guest,
        0,
        &["many-cancel", "other", "gate", "s/a", "s/b", "s/c"],
    );
    wait_counts(&backend, "s/a", 1, 0).await;
    wait_counts(&backend, "s/b", 1, 1).await;
    wait_counts(&backend, "other", 1, 1).await;
    native.release(held[1].id).expect("release other");
    wait_counts(&backend, "gate", 1, 1).await;
    wait_counts(&backend, "s/a", 0, 0).await;
    wait_counts(&backend, "s/b", 1, 0).await;
    assert!(
        backend.snapshot(&name("s/c")).is_empty(),
        "c was never taken"
    );
    native.release(held[0].id).expect("open the gate");
    let report = run.await.expect("guest task");
    assert_success(&report);
    assert_eq!(lines(&report), ["many-cancel: other first", "gate"]);
    native.release(b.id).expect("release b");
    assert_eq!(backend.active_names(), 0);
}

/// Revocation through 0.3.0's raw bindings (`lockctl3`): see
/// [`a_revoked_future_completes`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_completes_the_revoked_future() {
    a_revoked_future_completes(Guest::Lockctl3, "revoke-wait", "revoked; requested: true").await;
}

/// Revocation through the SDK's 0.3 API (`leader3`: `Guard::revoked`,
/// `request_revocation`): see [`a_revoked_future_completes`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_holder_yields_when_asked() {
    a_revoked_future_completes(Guest::Leader3, "yield", "asked to yield; requested: true").await;
}

/// A holder (`guest HOLD r`) awaits its lock's `revoked` future (set up
/// before the request: it holds `parked` only once it has the future);
/// another instance's revocation request (`guest ask r`) asks one holder and
/// completes the future, the holder then sees the request (`said`) and lets
/// go, and nothing is left.
async fn a_revoked_future_completes(which: Guest, hold: &str, said: &str) {
    let backend = MemoryBackend::new();
    let guest = runner(which, &backend, LockPolicy::new(), Some(TEST_WAIT_LIMIT));
    let holder = spawn_run(&guest, 0, &[hold, "r"]);
    wait_counts(&backend, "parked", 1, 0).await;
    let asker = spawn_run(&guest, 1, &["ask", "r"])
        .await
        .expect("asker task");
    assert_success(&asker);
    assert_eq!(lines(&asker), ["asked 1"]);
    let report = holder.await.expect("holder task");
    assert_success(&report);
    assert_eq!(lines(&report), [said]);
    assert_eq!(backend.active_names(), 0);
}

/// A runner of `lockctl3` on `backend`, every instance bounded by the
/// tests' wait limit.
fn lockctl3(backend: &MemoryBackend) -> Arc<wardlock_host::runner::Runner> {
    runner(
        Guest::Lockctl3,
        backend,
        LockPolicy::new(),
        Some(TEST_WAIT_LIMIT),
    )
}

/// A `lockctl3` instance running `args` on `backend`, returned once it holds
/// `parked`: its sign that what it then awaits is set up. Also returns the
/// runner, for more instances.
async fn parked(
    backend: &MemoryBackend,
    args: &[&str],
) -> (
    Arc<wardlock_host::runner::Runner>,
    tokio::task::JoinHandle<wardlock_host::runner::InstanceReport>,
) {
    let guest = lockctl3(backend);
    let run = spawn_run(&guest, 0, args);
    wait_counts(backend, "parked", 1, 0).await;
    (guest, run)
}
