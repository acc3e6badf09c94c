//! The guarded store through guests (WIT 0.2.2 `guarded`, issue 35): a write
//! commits only while its lock stands on the engine. The scenario it exists
//! for: a holder whose whole host is paused (SIGSTOP, as a long GC or a
//! stopped VM) past its session comes back believing it holds the lock; the
//! next holder has taken it and written meanwhile; the paused holder's write
//! must fail with `lost` and change nothing — on ZooKeeper, etcd, PostgreSQL and Valkey, with
//! real servers and real host processes.

use std::time::Duration;

use wardlock_host::MemoryBackend;
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::host_process::HostProcess;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{Guest, lines, lockctl2};

/// The session timeout of the paused host, in seconds.
const SESSION_TIMEOUT: &str = "2";

/// How long the second host may wait for the paused host's session to end
/// on the server (the session timeout plus the server's own ticks).
const TAKEOVER: Duration = Duration::from_secs(30);

/// `wardlock run` flags for `engine`, a data dir for `/data`, and lockctl2
/// with `commands`.
fn host_args(engine: &[String], data: &std::path::Path, commands: &[&str]) -> Vec<String> {
    let mut args = engine.to_vec();
    args.extend([
        "--session-timeout".to_owned(),
        SESSION_TIMEOUT.to_owned(),
        "--dir".to_owned(),
        format!("{}::/data", data.display()),
        Guest::Lockctl2.path().to_owned(),
        "--".to_owned(),
    ]);
    args.extend(commands.iter().map(|c| c.to_string()));
    args
}

/// The token of a `h<N> token=<T>` line.
fn token(line: &str) -> u64 {
    line.split("token=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
}

/// Host 1 holds `fenced` and writes; it is paused past its session; host 2
/// takes the lock and writes v2; host 1 resumes and its write of v1 fails
/// with `lost`; the entry reads v2 with host 2's token, on both hosts.
async fn a_paused_holder_cannot_overwrite(engine: Vec<String>) {
    let data = tempfile::tempdir().expect("temp dir");
    let lock = "fenced";
    let mut paused = HostProcess::start(&host_args(
        &engine,
        data.path(),
        &[
            &format!("acquire x - {lock}"),
            "put h1 v v0",
            "wait-file /data/go",
            "put h1 v v1",
            &format!("read {lock} v"),
        ],
    ));
    let first = paused.line().await;
    assert!(first.starts_with("h1 token="), "host 1: {first}");
    let put = paused.line().await;
    assert!(put.starts_with("rev="), "host 1's first put: {put}");
    paused.pause();

    let other_data = tempfile::tempdir().expect("temp dir");
    let mut next = HostProcess::start(&host_args(
        &engine,
        other_data.path(),
        &[
            &format!("acquire x {} {lock}", TAKEOVER.as_millis()),
            "put h1 v v2",
            &format!("read {lock} v"),
        ],
    ));
    let granted = next.line_within(TAKEOVER).await;
    assert!(granted.starts_with("h1 token="), "host 2: {granted}");
    assert!(token(&granted) > token(&first), "{granted} after {first}");
    let written = next.line().await;
    assert!(written.starts_with("rev="), "host 2's put: {written}");
    let read = next.line().await;
    assert_eq!(
        read.split(" rev=").next(),
        Some(format!("v2 token={}", token(&granted)).as_str()),
        "host 2 reads its own write"
    );
    assert_eq!(next.exit_code().await, Some(0));

    std::fs::write(data.path().join("go"), "").expect("write the go-ahead");
    paused.resume();
    assert_eq!(paused.line().await, "file");
    assert_eq!(paused.line().await, "err lost", "the paused holder's write");
    let after = paused.line().await;
    assert_eq!(
        after.split(" rev=").next(),
        Some(format!("v2 token={}", token(&granted)).as_str()),
        "the stale write changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_cannot_overwrite_the_next_on_zookeeper() {
    let server = ZkServer::start();
    a_paused_holder_cannot_overwrite(vec!["--zookeeper".into(), server.address()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_cannot_overwrite_the_next_on_etcd() {
    let server = EtcdServer::start();
    a_paused_holder_cannot_overwrite(vec!["--etcd".into(), server.address()]).await;
}

/// On PostgreSQL the paused host's connection idles past its
/// `idle_session_timeout` (the session timeout): the server ends it and
/// frees the lock; the resumed host's write is refused by its own clock, and
/// could not run on the ended connection anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_cannot_overwrite_the_next_on_postgres() {
    let server = PgServer::start();
    a_paused_holder_cannot_overwrite(vec!["--postgres".into(), server.url()]).await;
}

/// On Valkey the paused host stops renewing its session key: the server
/// lets it expire, the next host's look finds the member dead; the resumed
/// host's write is refused by its own clock, and by the script (its member
/// is gone) had it left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_cannot_overwrite_the_next_on_valkey() {
    let server = RedisServer::start(Flavor::Valkey);
    a_paused_holder_cannot_overwrite(vec!["--redis".into(), server.url()]).await;
}

/// Every call and refusal of the store through a guest, on the embedded
/// engine: a write through a released lock is `released`, through a shared
/// one `invalid-request`; reads and lists need the name granted only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guarded_calls_through_a_guest() {
    let backend = MemoryBackend::new();
    let report = lockctl2(
        &backend,
        &[
            "read orders k",
            "acquire x - orders",
            "put h1 k one",
            "put h1 j two",
            "read orders k",
            "keys orders - 10",
            "keys orders k 10",
            "del h1 j",
            "del h1 j",
            "release h1",
            "put h1 k late",
            "acquire s - orders",
            "put h2 k reader",
            "read orders k",
            "put h2 bad\u{1}key x",
            "read ../bad k",
        ],
    )
    .await;
    let out = lines(&report);
    assert_eq!(out[0], "none");
    let token = token(&out[1]);
    assert!(out[2].starts_with("rev="), "{out:?}");
    assert_eq!(
        out[4].split(" rev=").next(),
        Some(format!("one token={token}").as_str())
    );
    assert_eq!(out[5], "j k .", "every key, sorted: {out:?}");
    assert_eq!(out[6], "k .", "{out:?}");
    assert_eq!((out[7].as_str(), out[8].as_str()), ("true", "false"));
    assert_eq!(out[9], "ok");
    assert_eq!(out[10], "err released", "{out:?}");
    assert!(out[12].starts_with("err invalid-request"), "{out:?}");
    assert!(
        out[13].starts_with("one token="),
        "nothing refused was written: {out:?}"
    );
    assert!(out[14].starts_with("err invalid-request"), "{out:?}");
    assert!(out[15].starts_with("err invalid-name"), "{out:?}");
}
