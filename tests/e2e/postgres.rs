//! The Postgres engine against a real PostgreSQL server (Debian's
//! `postgresql`) that each test starts on a loopback port and stops: the
//! conformance kit, the key shared with sqlx's `PgAdvisoryLock` (both ways,
//! and with plain `pg_advisory_lock(key)`), a counter through `wardlock run
//! --postgres`, `wardlock status`, waits withdrawn on the server, and the
//! bound on a host's connections.

use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgAdvisoryLock, PgConnection};
use wardlock_host::{BackendError, LockBackend, Mode};
use wardlock_postgres::{PostgresBackend, PostgresConfig, advisory_key};
use wardlock_tests::conformance::{self, Subject};
use wardlock_tests::postgres::{PgServer, lock_state};
use wardlock_tests::probe::HandoffProbe;
use wardlock_tests::serve::wardlock_bin;
use wardlock_tests::{TEST_WAIT_LIMIT, name, timed_out_waits};

use crate::cli::run_counters;

/// A backend ("a host") on `url` with a 10 s session timeout.
pub(crate) async fn backend(url: &str) -> PostgresBackend {
    PostgresBackend::connect(PostgresConfig::new(url))
        .await
        .expect("postgres backend")
}

/// Waits (bounded) until the server shows no advisory lock at all.
pub(crate) async fn wait_no_advisory_lock(server: &PgServer) {
    let started = std::time::Instant::now();
    loop {
        let locks = server.advisory_locks();
        if locks.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "advisory locks left: {locks:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The whole conformance kit on Postgres (locks, downgrade, contenders, the
/// guarded store, guests; semaphores, revocation and elections answer
/// `Unsupported`); afterwards no advisory lock is left on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_backend_conforms() {
    let server = PgServer::start();
    let backend = Arc::new(backend(&server.url()).await);
    let url = server.url();
    let subject = Subject::new(backend.clone(), Arc::new(HandoffProbe(backend.clone())))
        .server_state(move || lock_state(url.clone()));
    conformance::all(&subject).await;
    drop(subject);
    wait_no_advisory_lock(&server).await;
    backend.shutdown().await;
}

/// Waits timed out at every moment around their queueing, from another
/// host than the holder's, leave no advisory lock
/// ([`wardlock_tests::timed_out_waits`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_timed_out_around_their_queueing_leave_no_lock() {
    let server = PgServer::start();
    let holder = backend(&server.url()).await;
    let waiter = Arc::new(backend(&server.url()).await);
    let lock = name("dropped");
    let outcome = timed_out_waits::leave_the_lock_free(&holder, waiter.clone(), &lock).await;
    if let Err(why) = outcome {
        panic!("{why}\n{}", lock_state(server.url()).await);
    }
    wait_no_advisory_lock(&server).await;
    waiter.shutdown().await;
    holder.shutdown().await;
}

/// `wardlock run --postgres` with 8 counter instances counts exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_postgres_counts_exactly() {
    let server = PgServer::start();
    let url = server.url();
    assert_eq!(
        run_counters(&["--postgres", &url], "pg-counter", "25").await,
        (0, "200".to_owned())
    );
    wait_no_advisory_lock(&server).await;
}

/// A lock NAME is sqlx's `PgAdvisoryLock::new(NAME)`: the same key, and the
/// two exclude each other both ways; a plain `pg_advisory_lock(key)` session
/// (psql) blocks guests too. `wardlock status` names the key and who holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlx_and_guests_exclude_each_other_both_ways() {
    let server = PgServer::start();
    let backend = backend(&server.url()).await;
    let lock = name("orders-42");
    let sqlx_lock = PgAdvisoryLock::new("orders-42");
    assert_eq!(
        sqlx_lock.key().as_bigint(),
        Some(advisory_key(&lock)),
        "wardlock derives sqlx's key"
    );

    // sqlx first: the guest's try fails, its wait is granted once sqlx lets go.
    let conn = PgConnection::connect(&server.url()).await.expect("sqlx");
    let guard = sqlx_lock.acquire(conn).await.expect("sqlx acquires");
    let session = backend.open_session("guest");
    assert!(
        session
            .try_acquire(&lock, Mode::Exclusive)
            .await
            .expect("try")
            .is_none(),
        "a guest got a lock sqlx holds"
    );
    let waiting = tokio::spawn(async move {
        let grant = session
            .acquire(&lock, Mode::Exclusive, None)
            .await
            .expect("granted after sqlx");
        (session, grant)
    });
    // The guest waits in the server's queue, behind sqlx.
    wait_for(&server, |locks| locks.iter().any(|l| !l.granted)).await;
    let status = std::process::Command::new(wardlock_bin())
        .args(["status", "--postgres", &server.url(), "--json", "orders-42"])
        .output()
        .expect("run wardlock status");
    assert!(status.status.success(), "{status:?}");
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
    let key = advisory_key(&name("orders-42"));
    assert_eq!(
        report["location"],
        format!("advisory key {key}"),
        "{report}"
    );
    assert_eq!(
        (report["holders"].as_u64(), report["waiters"].as_u64()),
        (Some(1), Some(1)),
        "{report}"
    );
    assert!(!waiting.is_finished(), "granted while sqlx held");
    let conn = guard.release_now().await.expect("sqlx releases");
    let (session, grant) = tokio::time::timeout(TEST_WAIT_LIMIT, waiting)
        .await
        .expect("granted within the wait limit of sqlx's release")
        .expect("join");

    // The guest first: sqlx's try fails until the guest releases.
    let conn = match sqlx_lock.try_acquire(conn).await.expect("sqlx try") {
        sqlx::Either::Left(_) => panic!("sqlx got a lock a guest holds"),
        sqlx::Either::Right(conn) => conn,
    };
    session.release(grant.id).expect("release");
    let started = std::time::Instant::now();
    let mut conn = conn;
    let guard = loop {
        match sqlx_lock.try_acquire(conn).await.expect("sqlx try") {
            sqlx::Either::Left(guard) => break guard,
            sqlx::Either::Right(back) => conn = back,
        }
        assert!(started.elapsed() < TEST_WAIT_LIMIT, "sqlx never got it");
        // The guest's unlock runs in the background.
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    guard.release_now().await.expect("sqlx releases");

    // Plain pg_advisory_lock(key) from psql blocks guests as well.
    let mut psql = server
        .psql_command()
        .arg("-c")
        .arg(format!(
            "SELECT pg_advisory_lock({key}); SELECT pg_sleep(60)"
        ))
        .spawn()
        .expect("psql");
    wait_for(&server, |locks| {
        locks.iter().any(|l| l.key == key && l.granted)
    })
    .await;
    let session = backend.open_session("guest");
    assert!(
        session
            .try_acquire(&name("orders-42"), Mode::Exclusive)
            .await
            .expect("try")
            .is_none(),
        "a guest got a lock psql holds"
    );
    // Killing psql would not free it: its backend sleeps on, unaware.
    assert_eq!(server.terminate_backends_holding(key), 1);
    let _ = psql.wait();
    let grant = session
        .acquire(&name("orders-42"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted once psql is gone");
    session.release(grant.id).expect("release");
    drop(session);
    wait_no_advisory_lock(&server).await;
    backend.shutdown().await;
}

/// Waits (bounded) until the server's advisory locks satisfy `test`.
pub(crate) async fn wait_for(
    server: &PgServer,
    test: impl Fn(&[wardlock_tests::postgres::AdvisoryLock]) -> bool,
) {
    let started = std::time::Instant::now();
    loop {
        let locks = server.advisory_locks();
        if test(&locks) {
            return;
        }
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "advisory locks now: {locks:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A wait that times out, and one whose future is dropped, are withdrawn
/// on the server: `pg_locks` shows no waiter afterwards, and the holder's
/// lock is the only one left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_and_dropped_waits_leave_the_server_s_queue() {
    let server = PgServer::start();
    let holder = backend(&server.url()).await;
    let waiter = backend(&server.url()).await;
    let lock = name("withdrawn");
    let key = advisory_key(&lock);
    let holding = holder.open_session("holder");
    let grant = holding
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("holder");
    let session = waiter.open_session("waiter");
    let error = session
        .acquire(&lock, Mode::Exclusive, Some(Duration::from_millis(300)))
        .await
        .expect_err("the holder keeps it");
    assert!(matches!(error, BackendError::Timeout), "{error:?}");
    wait_for(&server, |locks| {
        locks.iter().filter(|l| l.key == key).count() == 1
    })
    .await;

    // A dropped wait: queued on the server first, then dropped.
    let dropped = tokio::spawn({
        let waiter = Arc::new(waiter);
        let lock = lock.clone();
        async move {
            let session = waiter.open_session("dropped");
            let _ = session.acquire(&lock, Mode::Exclusive, None).await;
        }
    });
    wait_for(&server, |locks| {
        locks.iter().any(|l| l.key == key && !l.granted)
    })
    .await;
    dropped.abort();
    wait_for(&server, |locks| {
        locks.iter().filter(|l| l.key == key).count() == 1
    })
    .await;
    holding.release(grant.id).expect("release");
    wait_no_advisory_lock(&server).await;
    holder.shutdown().await;
}

/// 64 guests of one host on 64 names: uncontended, all on the main
/// connection; each name held by another client so all 64 wait, at most
/// `1 + wait_connections` server connections (the documented bound), and
/// every guest is granted once the other client lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_s_connections_stay_bounded_with_64_guests_on_64_names() {
    const GUESTS: usize = 64;
    const WAIT_CONNECTIONS: usize = 8;
    let server = PgServer::start();
    let config = PostgresConfig::new(&server.url()).wait_connections(WAIT_CONNECTIONS);
    let backend = Arc::new(PostgresBackend::connect(config).await.expect("backend"));
    let connections = || -> usize {
        server
            .psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wardlock'")
            .parse()
            .expect("count")
    };

    // Uncontended: 64 grants at once, one connection.
    let mut held = Vec::new();
    for i in 0..GUESTS {
        let session = backend.open_session(&format!("guest {i}"));
        let grant = session
            .acquire(&name(&format!("spread-{i}")), Mode::Exclusive, None)
            .await
            .expect("grant");
        held.push((session, grant));
    }
    assert_eq!(backend.open_connections(), 1);
    assert_eq!(connections(), 1);
    for (session, grant) in held.drain(..) {
        session.release(grant.id).expect("release");
    }

    // Contended: another client holds all 64; the guests wait.
    let keys: Vec<String> = (0..GUESTS)
        .map(|i| advisory_key(&name(&format!("spread-{i}"))).to_string())
        .collect();
    let mut other = server
        .psql_command()
        .arg("-c")
        .arg(format!(
            "SELECT pg_advisory_lock(k) FROM unnest(ARRAY[{}]::bigint[]) k; SELECT pg_sleep(60)",
            keys.join(",")
        ))
        .spawn()
        .expect("psql");
    wait_for(&server, |locks| {
        locks.iter().filter(|l| l.granted).count() == GUESTS
    })
    .await;
    let mut waiting = Vec::new();
    for i in 0..GUESTS {
        let backend = backend.clone();
        waiting.push(tokio::spawn(async move {
            let session = backend.open_session(&format!("guest {i}"));
            let grant = session
                .acquire(&name(&format!("spread-{i}")), Mode::Exclusive, None)
                .await
                .expect("grant");
            session.release(grant.id).expect("release");
        }));
    }
    wait_for(&server, |locks| {
        locks.iter().filter(|l| !l.granted).count() == WAIT_CONNECTIONS
    })
    .await;
    let during = connections();
    assert!(
        during <= 1 + WAIT_CONNECTIONS,
        "{during} connections with {WAIT_CONNECTIONS} wait connections"
    );
    assert!(backend.open_connections() <= 1 + WAIT_CONNECTIONS);
    // Killing psql would not free them: its backend sleeps on, unaware.
    let first_key = advisory_key(&name("spread-0"));
    assert_eq!(server.terminate_backends_holding(first_key), 1);
    let _ = other.wait();
    for guest in waiting {
        tokio::time::timeout(TEST_WAIT_LIMIT, guest)
            .await
            .expect("every guest granted in time")
            .expect("guest");
    }
    eprintln!(
        "{{\"metric\":\"postgres_connections\",\"guests\":{GUESTS},\"wait_connections\":{WAIT_CONNECTIONS},\"during\":{during},\"after\":{}}}",
        backend.open_connections()
    );
    wait_no_advisory_lock(&server).await;
    backend.shutdown().await;
}
