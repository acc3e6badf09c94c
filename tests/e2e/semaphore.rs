//! Semaphores on a real ZooKeeper (issue 13), natively: at most `n` holders
//! across hosts, nothing left behind by a timed-out or cancelled acquire, a
//! permit lost with its session; and shared with the real Curator's
//! `InterProcessSemaphoreV2` on the same path.
//!
//! Holders record when they start and stop holding as PERSISTENT_SEQUENTIAL
//! nodes under [`EVENTS`], created after the grant and before the release:
//! ZooKeeper's total order of those creates, replayed, must never show more
//! than `n` holders at once.

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::{BackendError, GrantStatus, LockBackend};
use wardlock_tests::holds::{self, Replay};
use wardlock_tests::interop::Foreign;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::zookeeper::{ZkServer, expire_session};
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_zookeeper::{ZooKeeperBackend, ZooKeeperConfig};
use zookeeper_client::{Acls, Client, CreateMode};

pub(crate) const ROOT: &str = "/wardlock";
/// Where holders log their intervals.
pub(crate) const EVENTS: &str = "/events";
pub(crate) const PERMITS: u32 = 3;
/// How long a holder works while holding (as the Java driver does), so that
/// holders overlap: not a synchronisation.
const HOLD: Duration = Duration::from_millis(50);

pub(crate) async fn host(address: &str) -> ZooKeeperBackend {
    let config = ZooKeeperConfig::new(address).root(ROOT);
    ZooKeeperBackend::connect(config).await.expect("backend")
}

/// Logs `what` (`+holder` or `-holder`) as the next event.
async fn event(client: &Client, what: &str) {
    let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    client
        .create(&format!("{EVENTS}/e-"), what.as_bytes(), &options)
        .await
        .expect("log event");
}

pub(crate) async fn events_parent(client: &Client) {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create(EVENTS, b"", &options).await.expect("events");
}

/// The events, replayed in ZooKeeper's order (`mixed`: a Curator and a
/// wardlock holder held together).
pub(crate) async fn replay(client: &Client) -> Replay {
    holds::replay(
        &holds::zookeeper_events(client, EVENTS).await,
        "java",
        "rust",
    )
}

/// `sessions` sessions of each backend take a permit of `sem` `rounds` times,
/// logging each hold.
async fn rust_holders(
    backends: &[ZooKeeperBackend],
    sessions: usize,
    rounds: usize,
    sem: &str,
    log: &Arc<Client>,
) {
    let mut tasks = Vec::new();
    for (h, backend) in backends.iter().enumerate() {
        for s in 0..sessions {
            let session = backend.open_session(&format!("host {h} session {s}"));
            let (sem, log) = (name(sem), log.clone());
            let holder = format!("rust{h}.{s}");
            tasks.push(tokio::spawn(async move {
                let mut last = 0;
                for _ in 0..rounds {
                    let grant = session
                        .semaphores()
                        .expect("semaphores")
                        .acquire_permit(&sem, PERMITS, Some(TEST_WAIT_LIMIT))
                        .await
                        .expect("permit");
                    assert!(grant.token > last, "a session's tokens grow");
                    last = grant.token;
                    event(&log, &format!("+{holder}")).await;
                    // Work while holding (not a synchronisation).
                    tokio::time::sleep(HOLD).await;
                    event(&log, &format!("-{holder}")).await;
                    session.release(grant.id).expect("release");
                }
            }));
        }
    }
    for task in tasks {
        tokio::time::timeout(TEST_WAIT_LIMIT * 4, task)
            .await
            .expect("holders finish in time")
            .expect("holder task");
    }
}

/// Two hosts × four sessions, 3 permits, 15 rounds each: never more than 3
/// holders, every round held, and nothing left under the semaphore.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_never_exceed_the_permits() {
    let server = ZkServer::start();
    let backends = [host(&server.address()).await, host(&server.address()).await];
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let log = Arc::new(ZkProbe::connect(&server.address(), "/").await.client);
    events_parent(&log).await;
    rust_holders(&backends, 4, 15, "pool", &log).await;
    let Replay {
        most, intervals, ..
    } = replay(&log).await;
    assert_eq!(intervals, 2 * 4 * 15);
    assert!(most <= PERMITS as usize, "{most} holders at once");
    assert!(most >= 2, "permits were held together ({most} at most)");
    eprintln!("semaphore: {intervals} holds, at most {most} at once");
    probe.wait_len("pool/leases", 0).await;
    probe.wait_len("pool/locks", 0).await;
}

/// A timed-out, a cancelled and a refused (try) acquire leave no lease node and
/// no internal mutex node; the holder keeps its permit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_cancel_leave_no_nodes() {
    let server = ZkServer::start();
    let backend = host(&server.address()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let sem = name("busy");
    let holder = backend.open_session("holder");
    let grant = holder
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, None)
        .await
        .expect("permit");
    let waiter = Arc::new(backend.open_session("waiter"));
    let timed_out = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, Some(Duration::from_millis(300)))
        .await;
    assert_eq!(timed_out, Err(BackendError::Timeout));
    probe.wait_len("busy/leases", 1).await;
    probe.wait_len("busy/locks", 0).await;
    assert_eq!(
        waiter
            .semaphores()
            .expect("semaphores")
            .try_acquire_permit(&sem, 1)
            .await
            .expect("try"),
        None
    );
    probe.wait_len("busy/leases", 1).await;
    probe.wait_len("busy/locks", 0).await;
    // One waits holding the mutex (its lease counted), one queues for the mutex.
    let mut cancelled = Vec::new();
    for _ in 0..2 {
        let (waiter, sem) = (waiter.clone(), sem.clone());
        cancelled.push(tokio::spawn(async move {
            waiter
                .semaphores()
                .expect("semaphores")
                .acquire_permit(&sem, 1, None)
                .await
        }));
    }
    probe.wait_len("busy/leases", 2).await;
    probe.wait_len("busy/locks", 2).await;
    for task in cancelled {
        task.abort();
    }
    probe.wait_len("busy/leases", 1).await;
    probe.wait_len("busy/locks", 0).await;
    assert_eq!(holder.status(grant.id), GrantStatus::Held);
    // The zero-permit request is refused before any I/O.
    let zero = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 0, None)
        .await;
    assert!(
        matches!(zero, Err(BackendError::InvalidRequest(_))),
        "{zero:?}"
    );
    let freed = holder.status_changed(grant.id, GrantStatus::Held);
    holder.release(grant.id).expect("release");
    assert_eq!(freed.await, GrantStatus::Released);
    probe.wait_len("busy/leases", 0).await;
    let next = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, Some(TEST_WAIT_LIMIT))
        .await;
    assert!(next.expect("permit").token > grant.token);
    drop(waiter);
    probe.wait_len("busy/leases", 0).await;
}

/// A held permit is `lost` once its ZooKeeper session expires, and a waiter
/// on another host is granted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_loses_the_permit() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let config = ZooKeeperConfig::new(proxy.address())
        .root(ROOT)
        .session_timeout(Duration::from_secs(10));
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let other = host(&server.address()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let sem = name("expiring");
    let session = backend.open_session("doomed");
    let grant = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, None)
        .await
        .expect("permit");
    let waiter = other.open_session("waiter");
    let waiting = tokio::spawn({
        let sem = sem.clone();
        async move {
            let grant = waiter
                .semaphores()
                .expect("semaphores")
                .acquire_permit(&sem, 1, Some(TEST_WAIT_LIMIT))
                .await;
            (waiter, grant)
        }
    });
    probe.wait_len("expiring/leases", 2).await;
    expire_session(&backend, &proxy, &server).await;
    // Held, perhaps suspended on the way, then lost: each change wakes us.
    let mut seen = GrantStatus::Held;
    while seen != GrantStatus::Lost {
        let change = session.status_changed(grant.id, seen);
        seen = tokio::time::timeout(TEST_WAIT_LIMIT, change)
            .await
            .expect("woken");
        assert_ne!(seen, GrantStatus::Released);
    }
    assert_eq!(session.status(grant.id), GrantStatus::Lost);
    let (waiter, next) = waiting.await.expect("task");
    let next = next.expect("the waiter is granted the freed permit");
    assert!(next.token > grant.token);
    assert_eq!(waiter.status(next.id), GrantStatus::Held);
}

/// The real Curator `InterProcessSemaphoreV2` (3 leases, 2 threads × 20) and
/// two wardlock hosts × 3 sessions × 10 share one semaphore: never more than 3
/// holders across both, Curator and wardlock holding together at some point,
/// every acquisition held once (none lost), nothing left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curator_and_wardlock_share_one_semaphore() {
    let server = ZkServer::start();
    let backends = [host(&server.address()).await, host(&server.address()).await];
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let log = Arc::new(ZkProbe::connect(&server.address(), "/").await.client);
    events_parent(&log).await;
    let curator = Foreign::curator(
        &server.address(),
        &format!("{ROOT}/shared"),
        "semaphore",
        &["leases", "2", "20", &PERMITS.to_string(), EVENTS],
    );
    let mut curator = curator;
    // Connected, its threads about to acquire: start the wardlock holders.
    curator.expect("ready").await;
    rust_holders(&backends, 3, 10, "shared", &log).await;
    curator.expect("done 40").await;
    curator.finish().await;
    let Replay {
        most,
        intervals,
        mixed,
    } = replay(&log).await;
    assert!(mixed, "Curator and wardlock never held permits together");
    assert_eq!(intervals, 40 + 2 * 3 * 10, "every acquisition held once");
    assert!(most <= PERMITS as usize, "{most} holders at once");
    assert!(most >= 2, "permits were held together ({most} at most)");
    eprintln!("curator + wardlock: {intervals} holds, at most {most} at once");
    probe.wait_len("shared/leases", 0).await;
    probe.wait_len("shared/locks", 0).await;
}
