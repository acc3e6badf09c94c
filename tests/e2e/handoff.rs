//! Host-local hand-off on a real ZooKeeper: the guests of one host queue once
//! per lock and pass the grant in memory, exclusive with other hosts and Curator,
//! with tokens rising across hand-offs and hosts, fair to other hosts within the
//! configured bound, and lingering only until another host wants the lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wardlock_host::{GrantStatus, LockBackend, Mode};
use wardlock_tests::interop::Foreign;
use wardlock_tests::probe::{HandoffProbe, Probe, ZkProbe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::zookeeper::{ZkServer, expire_session};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, assert_success, name, run_instances, runner_in};
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock";

async fn host(server: &ZkServer, limits: LocalHandoff) -> ZooKeeperBackend {
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .local_handoff(limits);
    ZooKeeperBackend::connect(config).await.expect("backend")
}

/// Two hosts of eight counter guests each and a Curator client increment one
/// file under one lock: no update is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_of_eight_guests_and_curator_count_exactly() {
    let server = ZkServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("count");
    let curator = Foreign::curator(
        &server.address(),
        &format!("{ROOT}/handoff-counter"),
        "rw-write",
        &["counter", "30", file.to_str().expect("utf-8")],
    );
    let mut hosts = Vec::new();
    for _ in 0..2 {
        let backend = host(&server, LocalHandoff::default()).await;
        let runner = runner_in(
            Guest::Counter,
            Arc::new(backend),
            dir.path(),
            Some(Duration::from_secs(120)),
        );
        hosts.push(tokio::spawn(async move {
            run_instances(&runner, 8, &["handoff-counter", "10", "/data/count"]).await
        }));
    }
    for host in hosts {
        host.await.expect("host").iter().for_each(assert_success);
    }
    curator.finish().await;
    let count = std::fs::read_to_string(&file).expect("count");
    assert_eq!(count.trim(), "190", "lost updates");
}

/// Grants of one lock, in the order they were made (recorded while holding).
#[derive(Default)]
struct Grants(Mutex<Vec<(usize, u64)>>);

impl Grants {
    fn push(&self, host: usize, token: u64) {
        self.0.lock().expect("grants").push((host, token));
    }

    fn take(&self) -> Vec<(usize, u64)> {
        std::mem::take(&mut *self.0.lock().expect("grants"))
    }
}

/// Tokens rise strictly over every grant of a lock, across local hand-offs and
/// across hosts, and both hosts hand off locally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_rise_across_hand_offs_and_hosts() {
    let server = ZkServer::start();
    let grants = Arc::new(Grants::default());
    let mut workers = Vec::new();
    for host_index in 0..2 {
        let backend = host(&server, LocalHandoff::default()).await;
        for worker in 0..4 {
            let (backend, grants) = (backend.clone(), grants.clone());
            workers.push(tokio::spawn(async move {
                let session = backend.open_session(&format!("host {host_index} worker {worker}"));
                for _ in 0..15 {
                    let grant = session
                        .acquire(&name("tokens"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                        .await
                        .expect("grant");
                    grants.push(host_index, grant.token);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    session.release(grant.id).expect("release");
                }
            }));
        }
    }
    for worker in workers {
        worker.await.expect("worker");
    }
    let grants = grants.take();
    assert_eq!(grants.len(), 120);
    for pair in grants.windows(2) {
        assert!(pair[0].1 < pair[1].1, "tokens do not rise: {pair:?}");
    }
    // Hand-offs under one node share its high bits.
    let local = grants
        .windows(2)
        .filter(|p| p[0].1 >> 16 == p[1].1 >> 16)
        .count();
    assert!(local > 0, "no local hand-off in {grants:?}");
}

/// How long each busy local guest holds the lock in the fairness tests.
const BUSY_HOLD: Duration = Duration::from_millis(20);

/// A waiter on another host, behind sixteen busy guests of one host, is granted
/// after at most the hand-off count bound (plus the grants made while the
/// host's watch reported it: one round trip).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_waiter_goes_after_the_hand_off_bound() {
    const BOUND: u32 = 8;
    let limits = LocalHandoff {
        max_handoffs: BOUND,
        // The count, not the time, is the bound under test.
        max_time: Duration::from_secs(60),
        linger: Duration::ZERO,
    };
    let during = local_grants_while_a_remote_waiter_queues(limits).await;
    // The holder at the time the waiter queued, the bound, and the grants made
    // before the watch reported the waiter (one round trip: at most two holds of
    // 20 ms each on a slow machine).
    assert!(
        during <= u64::from(BOUND) + 3,
        "{during} local grants while a remote waiter queued (bound {BOUND})"
    );
}

/// The same with the time bound: however many hand-offs the count would allow,
/// the host releases its node `max_time` after a remote contender queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_waiter_goes_after_the_hand_off_time_bound() {
    const MAX_TIME: Duration = Duration::from_millis(100);
    let limits = LocalHandoff {
        // The time, not the count, is the bound under test.
        max_handoffs: 1_000_000,
        max_time: MAX_TIME,
        linger: Duration::ZERO,
    };
    let during = local_grants_while_a_remote_waiter_queues(limits).await;
    // Holds of BUSY_HOLD fit MAX_TIME / BUSY_HOLD times into the bound; plus the
    // holder when the waiter queued and one round trip's grants. A host without
    // the time bound would hand off until the waiter's acquire timed out.
    let fit = (MAX_TIME.as_millis() / BUSY_HOLD.as_millis()) as u64;
    assert!(
        during <= fit + 3,
        "{during} local grants while a remote waiter queued ({MAX_TIME:?} bound: {fit} holds)"
    );
}

/// Sixteen guests of one host loop on lock `fair` (holding [`BUSY_HOLD`]);
/// once they hand off, a waiter on another host takes it once. Returns the
/// local grants made while that waiter queued.
async fn local_grants_while_a_remote_waiter_queues(limits: LocalHandoff) -> u64 {
    let server = ZkServer::start();
    let busy = host(&server, limits).await;
    let remote = host(&server, limits).await;
    let local_grants = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut guests = Vec::new();
    for guest in 0..16 {
        let (busy, local_grants, stop) = (busy.clone(), local_grants.clone(), stop.clone());
        guests.push(tokio::spawn(async move {
            let session = busy.open_session(&format!("busy guest {guest}"));
            // Bounded: the test stops the loop once the remote waiter is in.
            while !stop.load(Ordering::SeqCst) {
                let grant = session
                    .acquire(&name("fair"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                    .await
                    .expect("local grant");
                local_grants.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(BUSY_HOLD).await;
                session.release(grant.id).expect("release");
            }
        }));
    }
    // Wait (bounded) until the busy host hands off among its guests.
    let started = tokio::time::Instant::now();
    while local_grants.load(Ordering::SeqCst) < 20 {
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "the busy host made no grants"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let session = remote.open_session("remote waiter");
    let before = local_grants.load(Ordering::SeqCst);
    let asked = tokio::time::Instant::now();
    let grant = session
        .acquire(&name("fair"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the remote waiter is granted");
    let waited = asked.elapsed();
    let during = local_grants.load(Ordering::SeqCst) - before;
    session.release(grant.id).expect("release");
    stop.store(true, Ordering::SeqCst);
    for guest in guests {
        guest.await.expect("guest");
    }
    eprintln!(
        "{{\"metric\":\"remote_wait\",\"max_handoffs\":{},\"max_time_ms\":{},\"local_grants_while_waiting\":{during},\"waited_ms\":{}}}",
        limits.max_handoffs,
        limits.max_time.as_millis(),
        waited.as_millis()
    );
    during
}

/// With a linger, a re-acquire on the same host reuses the host's node (no
/// round trip: the next grant under the same node); another host's request
/// ends the linger at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linger_keeps_the_node_until_another_host_asks() {
    let server = ZkServer::start();
    let limits = LocalHandoff {
        linger: Duration::from_secs(600),
        ..LocalHandoff::default()
    };
    let lingering = host(&server, limits).await;
    let other = host(&server, LocalHandoff::default()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let session = lingering.open_session("guest");
    let first = session
        .acquire(&name("linger"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("first");
    session.release(first.id).expect("release");
    let again = session
        .acquire(&name("linger"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("again");
    assert_eq!(again.token, first.token + 1, "not the same node");
    session.release(again.id).expect("release");
    assert_eq!(
        probe.contenders("linger").await.len(),
        1,
        "the node lingers"
    );
    // Far sooner than the 600 s linger.
    let remote = other.open_session("remote");
    let grant = remote
        .acquire(&name("linger"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the linger ends for another host");
    assert!(grant.token > again.token);
    remote.release(grant.id).expect("release");
}

/// Local readers share the host's one read node; a local writer waits for
/// them, then takes a write node of its own, excluding readers until it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_readers_share_one_node_and_a_writer_waits_for_them() {
    let server = ZkServer::start();
    let backend = host(&server, LocalHandoff::default()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let lock = name("rw");
    let readers: Vec<_> = (0..3)
        .map(|i| backend.open_session(&format!("reader {i}")))
        .collect();
    let mut held = Vec::new();
    for reader in &readers {
        let grant = reader
            .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
            .await
            .expect("shared");
        held.push(grant);
    }
    assert_eq!(probe.contenders("rw").await.len(), 1, "one read node");
    let writer = Arc::new(backend.open_session("writer"));
    let mut writing = tokio::spawn({
        let (writer, lock) = (writer.clone(), lock.clone());
        async move {
            writer
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
        }
    });
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut writing)
            .await
            .is_err(),
        "the writer was granted beside readers"
    );
    for (reader, grant) in readers.iter().zip(held) {
        reader.release(grant.id).expect("release");
    }
    let grant = tokio::time::timeout(TEST_WAIT_LIMIT, writing)
        .await
        .expect("writer granted in time")
        .expect("task")
        .expect("writer grant");
    let late_reader = backend.open_session("late reader");
    assert_eq!(
        late_reader
            .try_acquire(&lock, Mode::Shared)
            .await
            .expect("try"),
        None,
        "a reader beside the writer"
    );
    writer.release(grant.id).expect("release");
    let read = late_reader
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("reader after the writer");
    late_reader.release(read.id).expect("release");
}

/// Session expiry: every local holder learns `lost`, and a guest still queued
/// at the host is granted on the next session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_makes_every_local_holder_lost() {
    let server = ZkServer::start();
    // Through a proxy, so that our client cannot take the session back while
    // another client attaches to it and closes it.
    let proxy = Proxy::start(server.address()).await;
    let config = ZooKeeperConfig::new(proxy.address())
        .root(ROOT)
        .local_handoff(LocalHandoff::default());
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let readers: Vec<_> = (0..2)
        .map(|i| backend.open_session(&format!("reader {i}")))
        .collect();
    let mut held = Vec::new();
    for reader in &readers {
        let grant = reader
            .acquire(&name("expiring"), Mode::Shared, None)
            .await
            .expect("hold");
        held.push(grant);
    }
    let writer = Arc::new(backend.open_session("queued writer"));
    let waiting = tokio::spawn({
        let writer = writer.clone();
        async move {
            writer
                .acquire(&name("expiring"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
        }
    });
    HandoffProbe(backend.clone()).wait_len("expiring", 3).await;
    expire_session(&backend, &proxy, &server).await;
    for (reader, grant) in readers.iter().zip(&held) {
        assert_eq!(reader.status(grant.id), GrantStatus::Lost);
    }
    let grant = waiting
        .await
        .expect("task")
        .expect("the queued writer is granted on the next session");
    assert_eq!(writer.status(grant.id), GrantStatus::Held);
    assert!(held.iter().all(|h| grant.token > h.token));
    writer.release(grant.id).expect("release");
}
