//! The Postgres engine under faults, on a real server each test starts and
//! stops: a holder's backend terminated (`pg_terminate_backend`), the server
//! restarted (cleanly and after a crash), the network to it cut by a proxy
//! that stops forwarding without closing, and restarts again and again under
//! two hosts × four workers. A holder is never told more than is true: it
//! reads `lost` before another host is granted its lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::{GrantStatus, LockBackend, LockSession, Mode};
use wardlock_postgres::{PostgresBackend, PostgresConfig, advisory_key};
use wardlock_tests::chaos::Contention;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::proxy::Proxy;
use wardlock_tests::{TEST_WAIT_LIMIT, name};

use crate::postgres::{backend, wait_for, wait_no_advisory_lock};

/// Follows `grant`'s status from `first` (its change from `held`, made
/// before the fault so it misses nothing) until `lost` (bounded), checking
/// that only `suspended` comes before it; returns when `lost` was read.
async fn lost_at(
    session: &dyn LockSession,
    grant: wardlock_host::GrantId,
    first: wardlock_host::StatusChange,
) -> Instant {
    let mut change = first;
    loop {
        let now = tokio::time::timeout(TEST_WAIT_LIMIT, change)
            .await
            .expect("status changed in time");
        match now {
            GrantStatus::Lost => return Instant::now(),
            GrantStatus::Suspended => change = session.status_changed(grant, now),
            other => panic!("{other:?} before lost"),
        }
    }
}

/// The holder's backend is terminated by an administrator: the holder reads
/// `lost` before the host waiting behind it is granted, and its next acquire
/// works on a new connection. Repeated 10 times (the order is a race the
/// engine must win every time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_backend_s_holder_reads_lost_before_another_host_is_granted() {
    let server = PgServer::start();
    // A grant that follows a terminated holder waits a tenth of the session
    // timeout: 3 s keeps the ten rounds short.
    let config = || PostgresConfig::new(&server.url()).session_timeout(Duration::from_secs(3));
    let first = Arc::new(
        PostgresBackend::connect(config())
            .await
            .expect("first host"),
    );
    let second = Arc::new(
        PostgresBackend::connect(config())
            .await
            .expect("second host"),
    );
    let lock = name("terminated");
    let key = advisory_key(&lock);
    for round in 0..10 {
        let holder = first.open_session("holder");
        let grant = holder
            .acquire(&lock, Mode::Exclusive, None)
            .await
            .expect("hold");
        let waiting = tokio::spawn({
            let (second, lock) = (second.clone(), lock.clone());
            async move {
                let waiter = second.open_session("waiter");
                let grant = waiter
                    .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                    .await
                    .expect("granted after the termination");
                (Instant::now(), waiter, grant)
            }
        });
        wait_for(&server, |locks| {
            locks.iter().any(|l| l.key == key && !l.granted)
        })
        .await;
        let holder: Arc<dyn LockSession> = Arc::from(holder);
        let change = holder.status_changed(grant.id, GrantStatus::Held);
        let watching = tokio::spawn({
            let holder = holder.clone();
            async move { lost_at(&*holder, grant.id, change).await }
        });
        // psql blocks: let the runtime's other worker run the hosts meanwhile.
        let terminated = tokio::task::block_in_place(|| server.terminate_backends_holding(key));
        assert_eq!(terminated, 1, "round {round}");
        let lost = watching.await.expect("join");
        let (granted, waiter, other) = waiting.await.expect("join");
        assert!(
            lost <= granted,
            "round {round}: the holder read lost {:?} after the other host's grant",
            lost - granted
        );
        waiter.release(other.id).expect("release");
        drop(holder);
        // The host goes on, on a new connection.
        let again = first.open_session("again");
        let grant = again
            .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await
            .expect("a new connection");
        again.release(grant.id).expect("release");
    }
    wait_no_advisory_lock(&server).await;
    first.shutdown().await;
    second.shutdown().await;
}

/// Takes `lock` on `session`, checking its token is above `last`.
async fn take_above(
    session: &dyn LockSession,
    lock: &wardlock_host::LockName,
    last: u64,
) -> wardlock_host::Grant {
    let grant = session
        .acquire(lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted");
    assert!(grant.token > last, "{} after {last}", grant.token);
    grant
}

/// A clean restart and a crash (SIGKILL, recovery): holders read `lost`,
/// the host grants again by itself, and fencing tokens keep rising across
/// both (the sequence is moved past every server start). Before each fault
/// 100 grants draw tokens the server has not flushed (its commits do not
/// wait for the disk), which a crash loses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_keep_rising_across_restarts_and_crashes() {
    let mut server = PgServer::start();
    let host = backend(&server.url()).await;
    let lock = name("restarts");
    let mut last_token = 0;
    for crash in [false, true, false, true] {
        let session = host.open_session("holder");
        for _ in 0..100 {
            let grant = take_above(&*session, &lock, last_token).await;
            last_token = grant.token;
            session.release(grant.id).expect("release");
        }
        let grant = take_above(&*session, &lock, last_token).await;
        last_token = grant.token;
        if crash {
            server.kill();
            server.restart();
        } else {
            server.restart();
        }
        let now = tokio::time::timeout(
            TEST_WAIT_LIMIT,
            session.status_changed(grant.id, GrantStatus::Held),
        )
        .await
        .expect("told in time");
        assert_eq!(now, GrantStatus::Lost, "crash {crash}");
        drop(session);
    }
    let session = host.open_session("after");
    let grant = session
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted after the restarts");
    assert!(grant.token > last_token);
    session.release(grant.id).expect("release");
    drop(session);
    wait_no_advisory_lock(&server).await;
    host.shutdown().await;
}

/// The network to the holder's host is cut by a proxy that stops forwarding
/// without closing: the holder reads `suspended`, then `lost`, before the
/// server ends its connection (`idle_session_timeout`: the session timeout
/// and a fifth)
/// and grants the host waiting behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_holder_reads_lost_before_another_host_is_granted() {
    let server = PgServer::start();
    let proxy = Proxy::start(server.address()).await;
    let url = format!("postgres://wardlock@{}/wardlock", proxy.address());
    let cut_off =
        PostgresBackend::connect(PostgresConfig::new(&url).session_timeout(Duration::from_secs(2)))
            .await
            .expect("backend through the proxy");
    let lock = name("cut-off");
    let holder = cut_off.open_session("holder");
    let grant = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    let other = backend(&server.url()).await;
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move {
            let waiter = other.open_session("waiter");
            let grant = waiter
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("granted once the server ended the cut-off connection");
            (Instant::now(), waiter, grant, other)
        }
    });
    let key = advisory_key(&lock);
    wait_for(&server, |locks| {
        locks.iter().any(|l| l.key == key && !l.granted)
    })
    .await;
    let first = holder.status_changed(grant.id, GrantStatus::Held);
    let cut = Instant::now();
    proxy.partition(true);
    let lost = lost_at(&*holder, grant.id, first).await;
    let (granted, waiter, other_grant, other) = waiting.await.expect("join");
    eprintln!(
        "{{\"metric\":\"postgres_cut\",\"lost_after_ms\":{},\"granted_after_ms\":{}}}",
        (lost - cut).as_millis(),
        (granted - cut).as_millis()
    );
    assert!(
        lost < granted,
        "the holder read lost {:?} after the other host's grant",
        lost - granted
    );
    waiter.release(other_grant.id).expect("release");
    drop(waiter);
    drop(holder);
    other.shutdown().await;
}

/// The server restarted 20 times, a second apart, under two hosts × four
/// workers on one lock, their history judged by the one checker of fault
/// runs (`chaos`): no two holders at once before the old one was told `lost`
/// (a restart ends every session; the order of the two is checked, not a
/// margin), tokens rising across restarts, no update lost but by a holder
/// told `lost`, no error seen by a worker (a wait cut by a restart starts
/// again by itself), no advisory lock left at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_under_contention_lose_no_update() {
    const RESTARTS: usize = 20;
    const RESTART_EVERY: Duration = Duration::from_secs(1);
    let mut server = PgServer::start();
    let mut hosts: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..2 {
        hosts.push(Arc::new(backend(&server.url()).await));
    }
    let contention = Contention::start(&hosts, 4, "pg-chaos", Duration::from_secs(30));
    let mut restarts = 0;
    while restarts < RESTARTS {
        tokio::time::sleep(RESTART_EVERY).await;
        tokio::task::block_in_place(|| server.restart());
        restarts += 1;
    }
    let report = contention.finish().await;
    for host in &hosts {
        host.shutdown().await;
    }
    wait_no_advisory_lock(&server).await;
    eprintln!(
        "{{\"metric\":\"postgres_restarts\",\"restarts\":{restarts},{}}}",
        report.json_fields()
    );
    assert!(restarts >= RESTARTS, "only {restarts} restarts");
    report.assert_safe();
    // A restart ends every session: a holder inside its turn is told `lost`
    // (these workers write a plain file, which nothing fences; the fence
    // tests cover fenced writes) and may still write, costing the update of
    // a holder after it: one at most per hold told lost, and nothing else.
    assert!(
        report.lost_updates <= report.told_lost,
        "lost updates beyond the holds told lost: {report:?}"
    );
}

/// A guarded write is one statement with its check, on the holding
/// connection: once the holder's backend is terminated the write is `lost`
/// and the entry keeps what the next holder wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_after_the_holder_s_backend_ended_is_lost() {
    let server = PgServer::start();
    let first = backend(&server.url()).await;
    let second = backend(&server.url()).await;
    let lock = name("guarded-terminated");
    // Quotes and backslashes in a key, NUL and 0xff in a value, survive.
    let key = wardlock_host::backend::GuardedKey::new(r"it's a \ key").expect("key");
    let holder = first.open_session("holder");
    let grant = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    holder
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &key, b"v1")
        .await
        .expect("put v1");
    assert_eq!(
        tokio::task::block_in_place(|| server.terminate_backends_holding(advisory_key(&lock))),
        1
    );
    let next = second.open_session("next");
    let next_grant = next
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the next holder");
    next.guarded_store()
        .expect("guarded_store")
        .guarded_put(next_grant.id, &key, b"v2\0\xff")
        .await
        .expect("put v2");
    let stale = holder
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(grant.id, &key, b"stale")
        .await;
    assert!(
        matches!(stale, Err(wardlock_host::BackendError::Lost)),
        "{stale:?}"
    );
    let entry = next
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &key)
        .await
        .expect("get")
        .expect("entry");
    assert_eq!(entry.value, b"v2\0\xff");
    assert_eq!(entry.token, next_grant.token);
    next.release(next_grant.id).expect("release");
    drop(holder);
    drop(next);
    wait_no_advisory_lock(&server).await;
    first.shutdown().await;
    second.shutdown().await;
}
