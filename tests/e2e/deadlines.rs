//! Deadlines and stops say what they are, on a real ZooKeeper server:
//! - many waiters whose timeouts expire together, under host-local hand-off,
//!   all get `timeout` (never `unavailable`, never before their deadline), and
//!   leave no node behind;
//! - `wardlock run` stopped by SIGTERM while its guest holds a lock releases
//!   the lock at once (the engine session is closed), not after a session
//!   timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::runner::RunnerConfig;
use wardlock_host::{BackendError, LockBackend, Mode};
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::serve::spinning_holder;
use wardlock_tests::zookeeper::{ZkServer, backend_under};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, hold, lines, name, run_instances, runner_with};

const ROOT: &str = "/wardlock";
const WAITERS: usize = 8;
const ROUNDS: usize = 20;
const TIMEOUT: Duration = Duration::from_millis(300);

/// Eight sessions of one hand-off host wait 20 times each, with a 300 ms
/// timeout, for a lock another host holds: the host-local task's deadline and
/// each waiter's own run out at the same moment, every round. Each wait ends
/// `timeout`, none before its deadline; then the lock's queue is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_that_expire_together_stay_timeouts() {
    let server = ZkServer::start();
    let lock = "deadline-race";
    let other_host = backend_under(&server, ROOT, false).await;
    let (holder, grant) = hold(&other_host, lock, Mode::Exclusive).await;
    let host = Arc::new(backend_under(&server, ROOT, true).await);
    let mut waiters = tokio::task::JoinSet::new();
    for waiter in 0..WAITERS {
        let host = host.clone();
        waiters.spawn(async move {
            let session = host.open_session(&format!("waiter-{waiter}"));
            let mut answers = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                let started = Instant::now();
                let answer = session
                    .acquire(&name(lock), Mode::Exclusive, Some(TIMEOUT))
                    .await;
                answers.push((answer.map(|_| ()), started.elapsed()));
            }
            answers
        });
    }
    let mut wrong = Vec::new();
    while let Some(answers) = waiters.join_next().await {
        for (answer, waited) in answers.expect("waiter task") {
            if !matches!(answer, Err(BackendError::Timeout)) || waited < TIMEOUT {
                wrong.push(format!("{answer:?} after {waited:?}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} timed-out waits answered otherwise or early: {wrong:?}",
        wrong.len(),
        WAITERS * ROUNDS
    );
    holder.release(grant.id).expect("release");
    drop(holder);
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    probe.wait_len(lock, 0).await;
}

/// The same race through guests: eight `lockctl2` guests of a hand-off host
/// each time out 20 times (`acquire` and `acquire-many` in turn) on a lock
/// another host holds; every answer is `err timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_timing_out_together_see_timeout() {
    let server = ZkServer::start();
    let lock = "deadline-race-guests";
    let other_host = backend_under(&server, ROOT, false).await;
    let (holder, grant) = hold(&other_host, lock, Mode::Exclusive).await;
    let runner = runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend: Arc::new(backend_under(&server, ROOT, true).await),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let ms = TIMEOUT.as_millis();
    let acquire = format!("acquire exclusive {ms} {lock}");
    let many = format!("many {ms} exclusive:{lock} exclusive:{lock}-other");
    let commands: Vec<&str> = (0..ROUNDS)
        .map(|round| if round % 2 == 0 { &acquire } else { &many })
        .map(String::as_str)
        .collect();
    let reports = run_instances(&runner, WAITERS, &commands).await;
    for report in &reports {
        wardlock_tests::assert_success(report);
        let answers = lines(report);
        assert_eq!(answers.len(), ROUNDS, "{answers:?}");
        assert!(
            answers.iter().all(|a| a == "err timeout"),
            "instance {}: {answers:?}",
            report.instance
        );
    }
    holder.release(grant.id).expect("release");
}

/// `wardlock run` (hand-off on or off) whose guest holds a lock and spins is
/// sent SIGTERM: within a second the lock's node is gone from ZooKeeper (the
/// session timeout is 10 s), and the exit code says SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_locks_of_run_at_once() {
    let server = ZkServer::start();
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    for handoff in [true, false] {
        let lock = if handoff {
            "sigterm-handoff"
        } else {
            "sigterm-direct"
        };
        let address = server.address();
        let mut flags = vec!["--zookeeper", &address, "--root", ROOT];
        if !handoff {
            flags.push("--no-local-handoff");
        }
        let mut child = spinning_holder(&flags, lock).await;
        assert_eq!(probe.contenders(lock).await.len(), 1, "the holder's node");
        let signalled = Instant::now();
        // SAFETY: kill(2) on the PID of a child this test spawned and has not reaped.
        unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
        tokio::time::timeout(Duration::from_secs(1), probe.wait_len(lock, 0))
            .await
            .unwrap_or_else(|_| {
                panic!("hand-off {handoff}: the lock's node outlived SIGTERM by a second")
            });
        let gone = signalled.elapsed();
        let status = tokio::task::spawn_blocking(move || child.0.wait())
            .await
            .expect("waiter")
            .expect("exit status");
        assert_eq!(status.code(), Some(143), "hand-off {handoff}: {status}");
        eprintln!("hand-off {handoff}: node gone {gone:?} after SIGTERM");
    }
}
