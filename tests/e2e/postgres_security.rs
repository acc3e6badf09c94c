//! The Postgres engine refuses at start what it cannot work with, in under
//! 5 s and naming the cause: PgBouncer in transaction pooling (a real
//! PgBouncer), a wrong password, a role without the rights it needs, a
//! password in the URL; and it works over TLS with `sslmode=verify-full`
//! and a client certificate, and through PgBouncer in session pooling.

use wardlock_host::{LockBackend, Mode};
use wardlock_postgres::{PostgresBackend, PostgresConfig};
use wardlock_tests::postgres::{PgBouncer, PgOptions, PgServer, TlsOptions};
use wardlock_tests::serve::wardlock_bin;
use wardlock_tests::{TEST_WAIT_LIMIT, name};

/// Connecting with `config` is refused within 5 s; the error's text.
async fn refused(config: PostgresConfig) -> String {
    wardlock_tests::refusal::refused(PostgresBackend::connect(config)).await
}

/// One grant and release through `backend`.
async fn lock_once(backend: &PostgresBackend) {
    let session = backend.open_session("guest");
    let grant = session
        .acquire(&name("secure"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted");
    session.release(grant.id).expect("release");
}

/// Behind PgBouncer in transaction pooling, session locks would silently
/// exclude nothing: refused at start, naming the pooling mode and what to do
/// (also by `wardlock run`, with exit code 2); in session pooling it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbouncer_in_transaction_mode_is_refused_and_session_mode_works() {
    let server = PgServer::start();
    let transaction = PgBouncer::start(&server, "transaction");
    let why = refused(PostgresConfig::new(&transaction.url())).await;
    assert!(why.contains("pool_mode = transaction"), "{why}");
    assert!(why.contains("pool_mode = session"), "{why}");
    assert!(why.contains("directly"), "{why}");
    let run = std::process::Command::new(wardlock_bin())
        .args(["run", "--postgres", &transaction.url()])
        .arg(wardlock_tests::Guest::Counter.path())
        .args(["--", "x", "1", "/tmp/never"])
        .output()
        .expect("run wardlock");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(stderr.contains("pool_mode = transaction"), "{stderr}");

    let session = PgBouncer::start(&server, "session");
    let backend = PostgresBackend::connect(PostgresConfig::new(&session.url()))
        .await
        .expect("session pooling works");
    lock_once(&backend).await;
    backend.shutdown().await;
}

/// `sslmode=verify-full` with a client certificate (`cert` in pg_hba.conf)
/// works; trusting another CA is refused in < 5 s naming the handshake and
/// what to check; a certificate-less client of a server that asks for one is
/// refused, pointing at the client certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_verify_full_with_a_client_certificate() {
    let server = PgServer::start_with(PgOptions {
        tls: Some(TlsOptions {
            client_cert: true,
            ..TlsOptions::default()
        }),
        password: None,
    });
    let backend = PostgresBackend::connect(PostgresConfig::new(&server.tls_url()))
        .await
        .expect("TLS with a client certificate");
    lock_once(&backend).await;
    assert_eq!(
        server.psql(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'wardlock' AND s.ssl AND s.client_dn IS NOT NULL"
        ),
        "1"
    );
    backend.shutdown().await;

    let pki = server.pki();
    let wrong_ca = format!(
        "postgres://wardlock@127.0.0.1:{}/wardlock?sslmode=verify-full&sslrootcert={}",
        server.port(),
        pki.other_ca().display()
    );
    let why = refused(PostgresConfig::new(&wrong_ca)).await;
    assert!(why.contains("TLS handshake"), "{why}");
    assert!(why.contains("sslrootcert"), "{why}");
    let no_client_cert = format!(
        "postgres://wardlock@127.0.0.1:{}/wardlock?sslmode=verify-full&sslrootcert={}",
        server.port(),
        pki.ca().display()
    );
    let why = refused(PostgresConfig::new(&no_client_cert)).await;
    assert!(why.contains("certificate"), "{why}");
    assert!(why.contains("sslcert"), "{why}");
}

/// A wrong password and a role without rights are refused at start within
/// 5 s with the cause; the password comes from a file or PGPASSWORD, and one
/// in the URL is refused without being shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_and_missing_rights_are_refused_with_the_cause() {
    let server = PgServer::start_with(PgOptions {
        tls: None,
        password: Some("right-password".into()),
    });
    let secret = wardlock_host::secret::Secret::new;
    let why = refused(PostgresConfig::new(&server.url())).await;
    assert!(why.contains("PGPASSWORD"), "{why}");
    let why = refused(PostgresConfig::new(&server.url()).password(Some(secret("wrong")))).await;
    assert!(why.contains("password"), "{why}");
    assert!(!why.contains("wrong"), "{why}");
    let backend = PostgresBackend::connect(
        PostgresConfig::new(&server.url()).password(Some(secret("right-password"))),
    )
    .await
    .expect("the right password");
    lock_once(&backend).await;
    backend.shutdown().await;

    // A role that may log in and nothing else: it cannot create the schema
    // of another database owner's… and, once the schema exists, cannot use it.
    server.create_role("reader", Some("reader-password"));
    let reader = format!("postgres://reader@127.0.0.1:{}/wardlock", server.port());
    let why = refused(PostgresConfig::new(&reader).password(Some(secret("reader-password")))).await;
    assert!(why.contains("GRANT"), "{why}");
    assert!(why.contains("reader"), "{why}");

    // `wardlock run` reads PGPASSWORD, and refuses a URL with a password.
    let dir = tempfile::tempdir().expect("dir");
    let data = format!("{}::/data", dir.path().display());
    let run = std::process::Command::new(wardlock_bin())
        .args(["run", "--postgres", &server.url(), "--dir", &data])
        .arg(wardlock_tests::Guest::Counter.path())
        .args(["--", "pw", "3", "/data/count"])
        .env("PGPASSWORD", "right-password")
        .output()
        .expect("run wardlock");
    assert!(run.status.success(), "{run:?}");
    let in_url = server.url_with_password();
    let run = std::process::Command::new(wardlock_bin())
        .args(["run", "--postgres", &in_url])
        .arg(wardlock_tests::Guest::Counter.path())
        .output()
        .expect("run wardlock");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("--postgres-password-file"), "{stderr}");
    assert!(!stderr.contains("right-password"), "{stderr}");
}
