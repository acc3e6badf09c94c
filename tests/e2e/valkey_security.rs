//! The Valkey/Redis engine over TLS and with ACL users, against a real
//! Debian `redis-server` 7.0 with a TLS port whose certificates are made at
//! test time: `rediss://` with a CA file and a client certificate works (the
//! API and `wardlock run`'s flags); the wrong CA, a missing client
//! certificate, a plaintext URL for a TLS port, a wrong password and a user
//! without rights are each refused within 5 s, naming the cause and what to
//! check, never the password.

use wardlock_backend::tls::TlsFiles;
use wardlock_host::secret::Secret;
use wardlock_host::{LockBackend, Mode};
use wardlock_tests::redis_server::RedisServer;
use wardlock_tests::{TEST_WAIT_LIMIT, name};
use wardlock_valkey::{ValkeyBackend, ValkeyConfig};

/// Connecting with `config` is refused within 5 s; the error's text.
async fn refused(config: ValkeyConfig) -> String {
    wardlock_tests::refusal::refused(ValkeyBackend::connect(config)).await
}

/// One grant and release through `backend`, then its shutdown.
async fn lock_once(backend: ValkeyBackend) {
    let session = backend.open_session("guest");
    let grant = session
        .acquire(&name("secure"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted");
    session.release(grant.id).expect("release");
    drop(session);
    backend.shutdown().await;
}

/// The TLS files of `server`'s CA and client certificate.
fn client_tls(server: &RedisServer) -> TlsFiles {
    let (cert, key) = server.pki().client();
    TlsFiles::new("--redis-tls", server.pki().ca()).identity(cert, key)
}

/// `rediss://` with the CA and a client certificate grants a lock (the TLS
/// port is the only one the host is given); another CA is refused naming
/// the handshake and the flags; without a client certificate, a server that
/// requires one refuses it; `redis://` to the TLS port is told to write
/// `rediss://`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_client_certificate_and_what_is_refused() {
    let server = RedisServer::start_tls(true);
    let backend =
        ValkeyBackend::connect(ValkeyConfig::new(server.tls_url()).tls(Some(client_tls(&server))))
            .await
            .expect("TLS with a client certificate");
    lock_once(backend).await;

    let (cert, key) = server.pki().client();
    let other_ca = TlsFiles::new("--redis-tls", server.pki().other_ca()).identity(cert, key);
    let why = refused(ValkeyConfig::new(server.tls_url()).tls(Some(other_ca))).await;
    assert!(why.contains("TLS to Valkey/Redis"), "{why}");
    assert!(why.contains("--redis-tls-ca"), "{why}");

    let no_client_cert = TlsFiles::new("--redis-tls", server.pki().ca());
    let why = refused(ValkeyConfig::new(server.tls_url()).tls(Some(no_client_cert))).await;
    assert!(why.contains("certificate"), "{why}");
    assert!(why.contains("--redis-tls-cert"), "{why}");

    let plaintext = format!("redis://127.0.0.1:{}", server.tls_port());
    let why = refused(ValkeyConfig::new(plaintext)).await;
    assert!(why.contains("speaks TLS"), "{why}");
    assert!(why.contains("rediss://"), "{why}");
}

/// An ACL user whose password comes from a file: the right one grants, a
/// wrong one is refused without being shown, a user without the rights the
/// engine needs is refused naming them; and `wardlock run` takes the user in
/// the URL, the password from `--redis-password-file` and TLS from
/// `--redis-tls-*`, and counts exactly over them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_users_with_a_password_file_and_tls_flags() {
    let server = RedisServer::start_tls(false);
    for rule in [
        "ACL SETUSER locker on >right-password ~* &* +@all",
        "ACL SETUSER reader on >reader-password ~* &* +ping +info +config|get",
    ] {
        let reply = server.cli(&rule.split(' ').collect::<Vec<_>>());
        assert_eq!(reply.trim(), "OK", "{rule}: {reply}");
    }
    let url = format!("redis://locker@127.0.0.1:{}", server.port());
    let secret = |s: &str| Some(Secret::new(s));

    let why = refused(ValkeyConfig::new(&url).password(secret("wrong-password"))).await;
    assert!(why.contains("login"), "{why}");
    assert!(why.contains("--redis-password-file"), "{why}");
    assert!(!why.contains("wrong-password"), "{why}");

    let reader = format!("redis://reader@127.0.0.1:{}", server.port());
    let why = refused(ValkeyConfig::new(reader).password(secret("reader-password"))).await;
    assert!(why.contains("refused this host's user"), "{why}");
    assert!(why.contains("EVALSHA"), "{why}");

    let backend =
        ValkeyBackend::connect(ValkeyConfig::new(&url).password(secret("right-password")))
            .await
            .expect("the right password");
    lock_once(backend).await;

    let dir = tempfile::tempdir().expect("temp dir");
    let password_file = dir.path().join("password");
    std::fs::write(&password_file, "right-password\n").expect("write the password file");
    let tls_url = format!("rediss://locker@127.0.0.1:{}", server.tls_port());
    let data = format!("{}::/data", dir.path().display());
    let ca = server.pki().ca().display().to_string();
    let password_file = password_file.display().to_string();
    let args = [
        "run",
        "--redis",
        &tls_url,
        "--redis-password-file",
        &password_file,
        "--redis-tls-ca",
        &ca,
        "--instances",
        "4",
        "--dir",
        &data,
        wardlock_tests::Guest::Counter.path(),
        "--",
        "tls-counter",
        "25",
        "/data/count",
    ];
    assert_eq!(crate::cli::wardlock(&args).await.expect("wardlock run"), 0);
    let count = std::fs::read_to_string(dir.path().join("count")).unwrap_or_default();
    assert_eq!(count.trim(), "100");
    let clients = server.cli(&["CLIENT", "LIST"]);
    assert!(
        !clients.contains("user=locker"),
        "left connected: {clients}"
    );
}
