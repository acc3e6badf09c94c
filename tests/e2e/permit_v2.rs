//! Semaphore permits through a guest built against `wardlock:lock@0.2.2`
//! (`lockctl2`'s permit commands): on the in-memory backend, never more
//! holders than permits across instances, permits released with the
//! instance (return or trap), typed errors for bad requests, the handle cap,
//! and `permit.subscribe` woken by an injected loss; on a real ZooKeeper,
//! guests on two hosts sharing one semaphore with the real Curator's
//! `InterProcessSemaphoreV2` (issue 13).
//!
//! Holders are counted by [`HoldLog`]: every permit a guest's session is
//! granted is logged (`+holder` after the grant, `-holder` before the
//! release) in one total order, beside the Curator driver's own events on
//! ZooKeeper.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wardlock_host::backend::memory::Fault;
use wardlock_host::runner::{Outcome, Runner, RunnerConfig};
use wardlock_host::{LockBackend, LockPolicy, MemoryBackend, Mode};
use wardlock_tests::holds::{self, HoldLog, Replay};
use wardlock_tests::interop::Foreign;
use wardlock_tests::loss::loss_reactions;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{
    Guest, TEST_WAIT_LIMIT, assert_outcome, assert_success, hold, lines, name, runner, runner_with,
    spawn_run, token_of, wait_counts, wait_queue,
};

use crate::semaphore::{EVENTS, PERMITS, ROOT, events_parent, host, replay};

/// Prints one measured figure as a JSON line.
fn metric(name: &str, value: impl std::fmt::Display) {
    println!("{{\"metric\":\"{name}\",\"value\":{value}}}");
}

/// A runner of `guest` on `backend` whose permits are logged in memory (as
/// held by `rust/<owner>`), and the log.
fn logged_runner(guest: Guest, backend: &MemoryBackend) -> (Arc<Runner>, Arc<Mutex<Vec<String>>>) {
    let (sink, log) = holds::memory_sink();
    let runner = runner_with(
        guest,
        RunnerConfig {
            backend: HoldLog::wrap(Arc::new(backend.clone()), "rust/", sink),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    (runner, log)
}

/// A runner of `guest` on `backend`, default policy, each instance limited
/// to [`TEST_WAIT_LIMIT`].
fn guest_runner(guest: Guest, backend: &MemoryBackend) -> Arc<Runner> {
    runner(guest, backend, LockPolicy::new(), Some(TEST_WAIT_LIMIT))
}

/// The replay of `log` once the semaphore `sem` is free (the last releases
/// are logged and made in tasks of their own).
async fn replayed(backend: &MemoryBackend, sem: &str, log: &Mutex<Vec<String>>) -> Replay {
    wait_queue(backend, sem, |q| q.is_empty()).await;
    let events = log.lock().expect("log").clone();
    holds::replay(&events, "rust", "java")
}

/// Six guests take a permit of a 3-permit semaphore 20 times each, holding
/// it 5 ms: never more than 3 holders at once, all 120 holds logged, nothing
/// left queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_never_exceed_the_permits_in_memory() {
    let backend = MemoryBackend::new();
    let (runner, log) = logged_runner(Guest::Lockctl2, &backend);
    let tasks: Vec<_> = (0..6)
        .map(|i| spawn_run(&runner, i, &["loop-permit 20 3 - 5 pool"]))
        .collect();
    for task in tasks {
        let report = task.await.expect("guest task");
        assert_success(&report);
        assert_eq!(lines(&report), ["looped 20"]);
    }
    let Replay {
        most, intervals, ..
    } = replayed(&backend, "pool", &log).await;
    assert_eq!(intervals, 6 * 20, "every acquisition held once");
    assert!(most <= 3, "{most} holders at once");
    assert!(most >= 2, "permits were held together ({most} at most)");
    metric("permit_v2_memory_holds", intervals);
    metric("permit_v2_memory_most_holders", most);
}

/// A guest's permits go with the instance: seen held while it lives (parked
/// on a gate), released when it traps, and when it returns holding one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_released_when_the_guest_traps_or_returns() {
    let backend = MemoryBackend::new();
    let runner = guest_runner(Guest::Lockctl2, &backend);
    let (native, gate) = hold(&backend, "gate", Mode::Exclusive).await;
    let guest = spawn_run(
        &runner,
        0,
        &[
            "permit 3 - pool",
            "permit 3 - pool",
            "acquire x - gate",
            "trap",
        ],
    );
    wait_counts(&backend, "pool", 2, 0).await;
    wait_counts(&backend, "gate", 1, 1).await;
    native.release(gate.id).expect("open the gate");
    let report = guest.await.expect("guest");
    assert_outcome!(report, Outcome::Trap(_));
    assert!(
        backend.snapshot(&name("pool")).is_empty(),
        "freed by the trap"
    );

    let report = spawn_run(&runner, 1, &["permit 3 - pool", "permit-status q1"])
        .await
        .expect("guest");
    assert_success(&report);
    assert_eq!(lines(&report)[1], "held");
    assert!(
        backend.snapshot(&name("pool")).is_empty(),
        "freed at return"
    );
    assert_eq!(backend.active_names(), 0);
}

/// On ZooKeeper too, a trapping guest's permits go with it: its two lease
/// nodes, seen while it lives (parked on a gate), are deleted once it trapped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_permits_go_with_a_trapping_guest() {
    let server = ZkServer::start();
    let backend = host(&server.address()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let (native, gate) = hold(&backend, "gate", Mode::Exclusive).await;
    let runner = runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend: Arc::new(backend.clone()),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let guest = spawn_run(
        &runner,
        0,
        &["permit 3 - z", "permit 3 - z", "acquire x - gate", "trap"],
    );
    probe.wait_len("z/leases", 2).await;
    probe.wait_len("gate", 2).await;
    native.release(gate.id).expect("open the gate");
    let report = guest.await.expect("guest");
    let ended = Instant::now();
    assert_outcome!(report, Outcome::Trap(_));
    probe.wait_len("z/leases", 0).await;
    probe.wait_len("z/locks", 0).await;
    metric(
        "permit_v2_zk_trap_to_leases_gone_us",
        ended.elapsed().as_micros(),
    );
}

/// Bad permit requests are typed errors naming the problem, never traps
/// (a name used as a lock, by this instance or another, included); release
/// twice says `released`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_permit_requests_are_typed_errors() {
    let backend = MemoryBackend::new();
    let (_native, _held) = hold(&backend, "theirs", Mode::Exclusive).await;
    let report = wardlock_tests::lockctl2(
        &backend,
        &[
            "permit 0 - zero",
            "permit 3 - pool",
            "permit 2 - pool",
            "acquire x - lk",
            "permit 1 - lk",
            "acquire s - pool",
            "try-permit 1 ../up",
            "release-permit q1",
            "release-permit q1",
            "permit-status q1",
            "try-permit 1 one",
            "try-permit 1 one",
            "permit 1 20 one",
            "permit-info q2",
            "permit 1 - theirs",
        ],
    )
    .await;
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(
        out[0],
        "err invalid-request: semaphore \"zero\" asked for 0 permits; a semaphore needs at least 1"
    );
    assert!(out[1].starts_with("q1 token="), "{out:?}");
    assert_eq!(
        out[2],
        "err invalid-request: \"pool\" is in use as a semaphore of 3 permits; \
         asked for a semaphore of 2 permits"
    );
    assert!(out[3].starts_with("h1 token="), "{out:?}");
    assert_eq!(
        out[4],
        "err invalid-request: \"lk\" is in use as a lock by this instance; \
         asked for a semaphore of 1 permits"
    );
    assert_eq!(
        out[5],
        "err invalid-request: \"pool\" is in use as a semaphore by this instance; \
         asked for a shared lock"
    );
    assert!(out[6].starts_with("err invalid-name: "), "{out:?}");
    assert_eq!(out[7..10], ["ok", "err released", "released"]);
    assert!(out[10].starts_with("q2 token="), "{out:?}");
    assert_eq!(out[11..13], ["none", "err timeout"]);
    assert_eq!(
        out[13],
        format!("one permits=1 token={}", token_of(&out[10]))
    );
}

/// A permit counts against the per-instance handle cap, and a permit's name
/// must be granted like a lock's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_cap_and_grants_apply_to_permits() {
    let backend = MemoryBackend::new();
    let policy = LockPolicy::new()
        .grant("ok")
        .expect("grant")
        .with_max_handles(2);
    let report = runner(Guest::Lockctl2, &backend, policy, Some(TEST_WAIT_LIMIT))
        .run(
            0,
            &[
                "acquire x - ok/l",
                "permit 5 - ok/p",
                "permit 5 - ok/p",
                "try-permit 5 ok/p",
                "drop-permit q1",
                "permit 5 - ok/p",
                "permit 1 - other",
            ]
            .map(String::from),
        )
        .await;
    assert_success(&report);
    let out = lines(&report);
    assert!(out[1].starts_with("q1 token="), "{out:?}");
    for line in &out[2..4] {
        assert!(
            line.starts_with("err limit-exceeded: this instance already has 2 handles"),
            "{out:?}"
        );
    }
    assert_eq!(out[4], "dropped");
    assert!(out[5].starts_with("q2 token="), "{out:?}");
    assert!(
        out[6].starts_with("err denied: ") && out[6].contains("\"other\""),
        "{out:?}"
    );
}

/// A guest waiting on `permit.subscribe()` learns of an injected expiry: the
/// time from the injection to its reaction (it takes the lock `ack`), as the
/// host sees both, in each of five rounds; the permit then reports `lost` and
/// its release says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_subscribe_learns_of_an_injected_loss() {
    let backend = MemoryBackend::new();
    let runner = guest_runner(Guest::Lockctl2, &backend);
    let (latencies, reports) = loss_reactions(
        &backend,
        &runner,
        5,
        "f",
        &[
            "permit 3 - f",
            "acquire x - parked",
            "notify-permit q1 ack",
            "permit-status q1",
            "release-permit q1",
            "acquire x - gate",
        ],
    )
    .await;
    for report in &reports {
        assert_eq!(lines(report)[2..5], ["woke lost", "lost", "err lost"]);
    }
    let worst = latencies[latencies.len() - 1];
    metric(
        "permit_v2_subscribe_loss_median_us",
        latencies[latencies.len() / 2].as_micros(),
    );
    metric("permit_v2_subscribe_loss_worst_us", worst.as_micros());
    assert!(
        worst <= Duration::from_millis(50),
        "a round over 50 ms: {latencies:?}"
    );
}

/// Issue 13: the real Curator `InterProcessSemaphoreV2` (3 leases, 2 threads
/// × 20) and `lockctl2` guests on two wardlock hosts (3 instances each × 10,
/// holding 50 ms) share one semaphore path: never more than 3 holders across
/// both, Curator and guests holding together at some point, every
/// acquisition of both sides held exactly once (no lost or doubled hold),
/// nothing left on ZooKeeper.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curator_and_guests_share_one_semaphore() {
    let server = ZkServer::start();
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let log = Arc::new(ZkProbe::connect(&server.address(), "/").await.client);
    events_parent(&log).await;
    let mut runners = Vec::new();
    for h in 0..2 {
        let backend: Arc<dyn LockBackend> = Arc::new(host(&server.address()).await);
        let sink = holds::zookeeper_sink(log.clone(), EVENTS);
        runners.push(runner_with(
            Guest::Lockctl2,
            RunnerConfig {
                backend: HoldLog::wrap(backend, &format!("rust-host{h}/"), sink),
                timeout: Some(TEST_WAIT_LIMIT * 4),
                ..RunnerConfig::default()
            },
        ));
    }
    let mut curator = Foreign::curator(
        &server.address(),
        &format!("{ROOT}/shared"),
        "semaphore",
        &["leases", "2", "20", &PERMITS.to_string(), EVENTS],
    );
    curator.expect("ready").await;
    let started = Instant::now();
    let command = format!("loop-permit 10 {PERMITS} 30000 50 shared");
    let mut guests = Vec::new();
    for runner in &runners {
        for i in 0..3 {
            guests.push(spawn_run(runner, i, &[command.as_str()]));
        }
    }
    for guest in guests {
        let report = guest.await.expect("guest task");
        assert_success(&report);
        assert_eq!(lines(&report), ["looped 10"]);
    }
    curator.expect("done 40").await;
    curator.finish().await;
    let elapsed = started.elapsed();
    probe.wait_len("shared/leases", 0).await;
    probe.wait_len("shared/locks", 0).await;
    let Replay {
        most,
        intervals,
        mixed,
    } = replay(&log).await;
    assert!(mixed, "Curator and the guests never held permits together");
    assert_eq!(intervals, 40 + 2 * 3 * 10, "every acquisition held once");
    assert!(most <= PERMITS as usize, "{most} holders at once");
    assert!(most >= 2, "permits were held together ({most} at most)");
    metric("permit_v2_curator_guests_holds", intervals);
    metric("permit_v2_curator_guests_most_holders", most);
    metric("permit_v2_curator_guests_ms", elapsed.as_millis());
}

/// The SDK's semaphores in a guest (`plugins/throttle`): five instances take
/// one of 2 permits 10 times each, working 5 ms under it: never more than 2
/// at work at once, all 50 holds logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_permits_throttle_the_instances() {
    let backend = MemoryBackend::new();
    let (runner, log) = logged_runner(Guest::Throttle, &backend);
    let tasks: Vec<_> = (0..5)
        .map(|i| spawn_run(&runner, i, &["jobs", "2", "10", "5"]))
        .collect();
    for task in tasks {
        let report = task.await.expect("guest task");
        assert_success(&report);
        assert!(
            report
                .stdout_text()
                .starts_with("throttle: jobs 10 rounds of 2 permits, last token "),
            "{}",
            report.stdout_text()
        );
    }
    let Replay {
        most, intervals, ..
    } = replayed(&backend, "jobs", &log).await;
    assert_eq!(intervals, 5 * 10);
    assert!(most <= 2, "{most} at work at once");
    metric("permit_v2_sdk_most_holders", most);
}

/// A `throttle` guest working under its permit (a 30 s timer beside the
/// permit's pollable) stops as soon as the permit is lost, with exit code 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_permit_loss_stops_the_work() {
    let backend = MemoryBackend::new();
    let runner = guest_runner(Guest::Throttle, &backend);
    let guest = spawn_run(&runner, 0, &["solo", "1", "1", "30000"]);
    wait_counts(&backend, "solo", 1, 0).await;
    let owner = backend.snapshot(&name("solo"))[0].owner.clone();
    let injected = Instant::now();
    assert_eq!(backend.inject(&owner, Fault::Expire), 1);
    let report = guest.await.expect("guest");
    let stopped = injected.elapsed();
    assert_outcome!(report, Outcome::Exit(1));
    assert!(
        report
            .stderr_text()
            .contains("round 0: the permit is lost: work stopped"),
        "{}",
        report.stderr_text()
    );
    metric("permit_v2_sdk_loss_to_exit_us", stopped.as_micros());
    assert!(
        stopped < Duration::from_secs(5),
        "stopped after {stopped:?}"
    );
}
