//! Lock caching (issue 39), as `wardlock run` does it by default on etcd: a
//! host keeps its key after its last local holder releases, so its next
//! acquire costs no round trip and continues the key's tokens; another host
//! queueing for the lock takes it from the cache at once (a watch on the
//! queue, not the cache's time bound); `--no-lock-cache` gives the key up at
//! every release.

use std::time::Instant;

use wardlock_etcd::{EtcdBackend, EtcdConfig};
use wardlock_host::backend::handoff::DEFAULT_CACHE_TIME;
use wardlock_host::{LockBackend, Mode};
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::host_process::HostProcess;
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, name};

/// A `wardlock run --etcd` host whose guest takes and releases `lock` twice,
/// then waits for `/data/go`; `extra` flags before the guest.
fn cached_host(
    server: &EtcdServer,
    data: &std::path::Path,
    lock: &str,
    extra: &[&str],
) -> HostProcess {
    let mut args: Vec<String> = vec!["--etcd".into(), server.address()];
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend([
        "--dir".to_owned(),
        format!("{}::/data", data.display()),
        Guest::Lockctl2.path().to_owned(),
        "--".to_owned(),
        format!("acquire x - {lock}"),
        "release 1".to_owned(),
        format!("acquire x - {lock}"),
        "release 2".to_owned(),
        "wait-file /data/go".to_owned(),
    ]);
    HostProcess::start(&args)
}

/// The token of a `h<N> token=<T>` line.
fn token(line: &str) -> u64 {
    wardlock_tests::token_of(line)
}

/// Reads the guest's four lines: the two grants' tokens.
async fn two_grants(host: &mut HostProcess) -> (u64, u64) {
    let first = host.line().await;
    assert_eq!(host.line().await, "ok", "release 1");
    let second = host.line().await;
    assert_eq!(host.line().await, "ok", "release 2");
    (token(&first), token(&second))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lock_stays_cached_until_another_host_asks() {
    let server = EtcdServer::start();
    let data = tempfile::tempdir().expect("temp dir");
    let mut host = cached_host(&server, data.path(), "cached", &[]);
    let (first, second) = two_grants(&mut host).await;
    // The second grant came from the cached key: the same key's next token.
    assert_eq!(second, first + 1, "{first} then {second}");
    // Released, and still there: the host caches its key.
    let prefix = "/wardlock/cached/";
    assert_eq!(server.keys(prefix).await.len(), 1, "the cached key");

    // Another host asks: the cache gives the key up on the watch's event,
    // long before its time bound.
    let other = EtcdBackend::connect(EtcdConfig::new(&server.address()))
        .await
        .expect("another host");
    let session = other.open_session("other");
    let asked = Instant::now();
    let grant = session
        .acquire(&name("cached"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted from the cache");
    let waited = asked.elapsed();
    assert!(
        waited < DEFAULT_CACHE_TIME,
        "granted after {waited:?}: the cache's time bound, not the other host's request, ended it"
    );
    assert!(grant.token > second, "{} after {second}", grant.token);
    eprintln!(
        "{{\"metric\":\"cached_lock_remote_grant_ms\",\"ms\":{:.2}}}",
        waited.as_secs_f64() * 1000.0
    );
    session.release(grant.id).expect("release");
    drop(session);
    std::fs::write(data.path().join("go"), "").expect("go");
    assert_eq!(host.exit_code().await, Some(0));
    other.shutdown().await;
    server.wait_keys("/wardlock/", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lock_cache_gives_the_key_up_at_every_release() {
    let server = EtcdServer::start();
    let data = tempfile::tempdir().expect("temp dir");
    let mut host = cached_host(&server, data.path(), "uncached", &["--no-lock-cache"]);
    let (first, second) = two_grants(&mut host).await;
    // A new key for the second grant: its token is a later revision's.
    assert!(second >> 16 > first >> 16, "{first} then {second}");
    // Nothing left while the host still runs.
    server.wait_keys("/wardlock/uncached/", 0).await;
    std::fs::write(data.path().join("go"), "").expect("go");
    assert_eq!(host.exit_code().await, Some(0));
}
