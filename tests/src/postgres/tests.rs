//! The harness against the real programs, driven by `psql` alone.

use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{AdvisoryLock, PgBouncer, PgOptions, PgServer, TlsOptions, psql_at};
use crate::TEST_WAIT_LIMIT;
use crate::pki::TestPki;

/// A `psql` session spawned in the background, killed (by PID) when dropped.
struct Session(Child);

impl Session {
    fn spawn(server: &PgServer, sql: &str) -> Session {
        let child = server
            .psql_command()
            .args(["-c", sql])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn psql");
        Session(child)
    }

    /// Waits (bounded) for the session to end: whether psql succeeded.
    fn ended(&mut self) -> bool {
        super::process::wait_exit(&mut self.0, TEST_WAIT_LIMIT)
            .expect("the psql session ended in time")
            .success()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `server`'s advisory locks until `done` holds of them (bounded).
fn wait_locks(server: &PgServer, done: impl Fn(&[AdvisoryLock]) -> bool) -> Vec<AdvisoryLock> {
    let started = Instant::now();
    loop {
        let locks = server.advisory_locks();
        if done(&locks) {
            return locks;
        }
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "advisory locks now: {locks:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn answers_and_shows_advisory_locks_and_their_holders() {
    let server = PgServer::start();
    assert_eq!(server.psql("SELECT 1"), "1");
    assert_eq!(
        server.url(),
        format!("postgres://wardlock@127.0.0.1:{}/wardlock", server.port())
    );
    assert_eq!(server.address(), format!("127.0.0.1:{}", server.port()));
    // The role and database of the URL exist, and TCP clients are trusted.
    assert_eq!(
        psql_at(&server.url(), "SELECT current_user, current_database()").unwrap(),
        "wardlock|wardlock"
    );
    assert!(server.try_psql("SELECT nonsense").is_err());
    assert!(server.advisory_locks().is_empty());

    // A key with the high bit of classid set, and a shared one.
    let big = -4_294_967_291_i64; // 0xFFFF_FFFF_0000_0005
    let mut holder = Session::spawn(
        &server,
        &format!(
            "SELECT pg_advisory_lock({big}); SELECT pg_advisory_lock_shared(42); SELECT pg_sleep(60)"
        ),
    );
    wait_locks(&server, |locks| locks.len() == 2);
    let mut waiter = Session::spawn(&server, "SELECT pg_advisory_lock(42)");
    let locks = wait_locks(&server, |locks| locks.len() == 3);
    let holder_pid = locks.iter().find(|l| l.key == big).unwrap().pid;
    assert!(holder_pid.is_some());
    let lock = |key: i64, mode: &str| {
        locks
            .iter()
            .find(|l| l.key == key && l.mode == mode)
            .unwrap_or_else(|| panic!("no {mode} on {key}: {locks:?}"))
            .clone()
    };
    let exclusive = lock(big, "ExclusiveLock");
    assert!(exclusive.granted && !exclusive.int4_pair);
    assert_eq!(exclusive.database, "wardlock");
    let shared = lock(42, "ShareLock");
    assert!(shared.granted);
    assert_eq!(shared.pid, holder_pid);
    let waiting = lock(42, "ExclusiveLock");
    assert!(!waiting.granted);
    assert_ne!(waiting.pid, holder_pid);

    // The waiter is no holder; the holder of both keys is terminated once.
    assert_eq!(server.terminate_backends_holding(42), 1);
    assert!(!holder.ended(), "the terminated session failed");
    assert_eq!(server.terminate_backends_holding(big), 0);
    // The waiter got the lock, and let go of it as its session ended.
    assert!(waiter.ended());
    wait_locks(&server, <[AdvisoryLock]>::is_empty);
}

#[test]
fn restart_and_crash_keep_committed_data() {
    let mut server = PgServer::start();
    server.psql("CREATE TABLE tokens (v bigint); INSERT INTO tokens VALUES (1);");
    let port = server.port();
    server.restart();
    assert_eq!(server.port(), port);
    assert_eq!(server.psql("SELECT sum(v) FROM tokens"), "1");

    server.psql("INSERT INTO tokens VALUES (2);");
    let session = Session::spawn(&server, "SELECT pg_advisory_lock(7); SELECT pg_sleep(60)");
    wait_locks(&server, |locks| locks.len() == 1);
    server.kill();
    assert!(
        server.try_psql("SELECT 1").is_err(),
        "a killed server answers"
    );
    drop(session);
    server.restart();
    assert!(
        server
            .log()
            .contains("was not properly shut down; automatic recovery in progress"),
        "no crash recovery after kill:\n{}",
        server.log()
    );
    assert_eq!(server.psql("SELECT sum(v) FROM tokens"), "3");
    // Session locks die with their sessions.
    assert!(server.advisory_locks().is_empty());
    server.stop();
    assert!(
        server.try_psql("SELECT 1").is_err(),
        "a stopped server answers"
    );
}

#[test]
fn tls_server_takes_the_certificate_of_its_role() {
    let pki = Arc::new(TestPki::new());
    let server = PgServer::start_with(PgOptions {
        tls: Some(TlsOptions {
            pki: Some(pki.clone()),
            client_cert: true,
            allow_plaintext: false,
        }),
        password: None,
    });
    assert_eq!(
        psql_at(
            &server.tls_url(),
            "SELECT current_user, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
        )
        .unwrap(),
        "wardlock|t"
    );
    let verify = |rest: &str| {
        format!(
            "host=127.0.0.1 port={} dbname=wardlock user=wardlock {rest}",
            server.port()
        )
    };
    let ca = pki.ca().display().to_string();
    let (cert, key) = pki.client_for("wardlock");
    let (other_cert, other_key) = pki.client();
    let refused = [
        // No certificate.
        verify(&format!("sslmode=verify-full sslrootcert={ca}")),
        // A certificate of another name (CN=client).
        verify(&format!(
            "sslmode=verify-full sslrootcert={ca} sslcert={} sslkey={}",
            other_cert.display(),
            other_key.display()
        )),
        // Plaintext.
        verify("sslmode=disable"),
        // A server certificate the client's CA did not sign.
        verify(&format!(
            "sslmode=verify-full sslrootcert={} sslcert={} sslkey={}",
            pki.other_ca().display(),
            cert.display(),
            key.display()
        )),
    ];
    for conninfo in refused {
        let answer = psql_at(&conninfo, "SELECT 1");
        assert!(answer.is_err(), "{conninfo}: {answer:?}");
    }
    assert_eq!(server.psql("SELECT 1"), "1");

    // A bouncer reaches it over TLS with the role's certificate.
    let bouncer = PgBouncer::start(&server, "session");
    assert_eq!(
        bouncer.psql("SELECT current_user, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"),
        "wardlock|t"
    );
}

#[test]
fn password_server_refuses_a_wrong_password_and_plain_roles_have_no_rights() {
    let server = PgServer::start_with(PgOptions {
        password: Some("s3cret-pw".into()),
        ..PgOptions::default()
    });
    assert_eq!(server.password(), Some("s3cret-pw"));
    assert_eq!(
        psql_at(&server.url_with_password(), "SELECT current_user").unwrap(),
        "wardlock"
    );
    let wrong = format!(
        "postgres://wardlock:wrong@127.0.0.1:{}/wardlock",
        server.port()
    );
    let refused = psql_at(&wrong, "SELECT 1").unwrap_err();
    assert!(
        refused.contains("password authentication failed"),
        "{refused}"
    );
    assert!(psql_at(&server.url(), "SELECT 1").is_err(), "no password");
    assert_eq!(server.psql("SELECT 1"), "1");

    server.create_role("reader", Some("r-pw"));
    let reader = format!(
        "postgres://reader:r-pw@127.0.0.1:{}/wardlock",
        server.port()
    );
    assert_eq!(
        psql_at(
            &reader,
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
        )
        .unwrap(),
        "reader|f"
    );
    let denied = psql_at(&reader, "CREATE TABLE t (v int)").unwrap_err();
    assert!(denied.contains("permission denied"), "{denied}");

    let bouncer = PgBouncer::start(&server, "transaction");
    assert_eq!(bouncer.psql("SELECT current_user"), "wardlock");
}

#[test]
fn pgbouncer_relays_in_transaction_and_session_modes() {
    let server = PgServer::start();
    for mode in ["transaction", "session"] {
        let bouncer = PgBouncer::start(&server, mode);
        assert_eq!(
            bouncer.url(),
            format!("postgres://wardlock@127.0.0.1:{}/wardlock", bouncer.port())
        );
        assert_ne!(bouncer.port(), server.port());
        assert_eq!(bouncer.psql("SELECT 1"), "1", "{mode}");
        // The answer comes from the server, through the bouncer.
        assert_eq!(
            bouncer.psql("SELECT inet_server_port()"),
            server.port().to_string(),
            "{mode}"
        );
    }
}
