//! The standard `wasi:keyvalue` served from the lock engine, for a guest that
//! imports nothing of wardlock (`kv-counter`, a naive read-modify-write
//! counter, the way a Spin component keeps one): exact under a declared
//! lock, atomic `increment` without one, a write the fence refuses once the
//! declared lock is lost, and bad input refused by name with nothing
//! half-written. On memory, and across host processes on ZooKeeper: two
//! hosts' exact count, and a host paused past its session whose stale write
//! the fence refuses.

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::backend::LockBackend;
use wardlock_host::backend::keyvalue::{Bucket, KvCommit, KvKey, KvWrite};
use wardlock_host::backend::memory::{Fault, MemoryBackend};
use wardlock_host::runner::{Outcome, Runner, RunnerConfig};
use wardlock_tests::etcd::EtcdServer;
use wardlock_tests::host_process::HostProcess;
use wardlock_tests::postgres::PgServer;
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::serve::{Server, counts_per_key};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, holding_runner, runner_with};

/// The number `key` of bucket `default` holds, read through the engine.
async fn stored(backend: &MemoryBackend, key: &str) -> u64 {
    let session = backend.open_session("reader");
    let store = session.key_value().expect("memory has a key-value store");
    let bucket = Bucket::new("default").expect("bucket");
    let entry = store
        .kv_get(&bucket, &KvKey::new(key).expect("key"))
        .await
        .expect("read");
    let value = entry.map(|e| e.value).unwrap_or_default();
    String::from_utf8(value)
        .expect("utf-8")
        .parse()
        .expect("a number")
}

/// Whether `key` of bucket `default` exists.
async fn exists(backend: &MemoryBackend, key: &str) -> bool {
    let session = backend.open_session("reader");
    let store = session.key_value().expect("store");
    let bucket = Bucket::default();
    let key = KvKey::new(key).expect("key");
    store.kv_get(&bucket, &key).await.expect("read").is_some()
}

/// Writes `1` under `key` of bucket `default`, plainly.
async fn set(backend: &MemoryBackend, key: &str) {
    let session = backend.open_session("writer");
    let store = session.key_value().expect("store");
    let write = [KvWrite::put(KvKey::new(key).expect("key"), b"1".to_vec())];
    let committed = store.kv_write(&Bucket::default(), &write, &[]).await;
    assert_eq!(committed, Ok(KvCommit::Committed));
}

/// `instances` instances side by side, each running `args`: every outcome.
async fn run_side_by_side(runner: &Arc<Runner>, instances: usize, args: &[&str]) -> Vec<Outcome> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let runs: Vec<_> = (0..instances)
        .map(|instance| {
            let (runner, args) = (runner.clone(), args.clone());
            tokio::spawn(async move { runner.run(instance, &args).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for run in runs {
        let report = run.await.expect("join");
        assert_eq!(report.outcome, Outcome::Success, "{}", report.stdout_text());
        outcomes.push(report.outcome);
    }
    outcomes
}

/// 4 instances × 50 get-then-set: exact under `--hold counter`; without it
/// the same guests lose updates, which is what makes the exact count mean
/// something.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_value_counter_under_a_declared_lock_loses_no_update_on_memory() {
    let backend = MemoryBackend::new();
    let runner = holding_runner(Guest::KvCounter, &backend, &["counter"]);
    run_side_by_side(&runner, 4, &["count", "hits", "50"]).await;
    assert_eq!(stored(&backend, "hits").await, 200);

    let plain = MemoryBackend::new();
    let runner = holding_runner(Guest::KvCounter, &plain, &[]);
    run_side_by_side(&runner, 4, &["count", "hits", "50"]).await;
    let unlocked = stored(&plain, "hits").await;
    assert!(
        unlocked < 200,
        "no update lost without the lock: {unlocked}"
    );
}

/// `atomics.increment` is atomic per key with no lock at all: 8 instances ×
/// 100 end exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increment_is_atomic_without_a_lock_on_memory() {
    let backend = MemoryBackend::new();
    let runner = holding_runner(Guest::KvCounter, &backend, &[]);
    run_side_by_side(&runner, 8, &["increment", "n", "100"]).await;
    assert_eq!(stored(&backend, "n").await, 800);
}

/// A declared lock lost while the guest sits between its read and its write:
/// the instance is stopped, the next holder's work stands, and nothing of
/// the first instance is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_after_the_declared_lock_is_lost_never_lands() {
    let backend = MemoryBackend::new();
    let runner = holding_runner(Guest::KvCounter, &backend, &["counter"]);
    // `hold-then-add` reads, marks `hits.reading`, then waits for `hits.go`:
    // it sits between its read and its write until the test says.
    let first = tokio::spawn({
        let runner = runner.clone();
        async move {
            runner
                .run(0, &["hold-then-add".into(), "hits".into(), "1000".into()])
                .await
        }
    });
    let deadline = tokio::time::Instant::now() + TEST_WAIT_LIMIT;
    while !exists(&backend, "hits.reading").await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the guest never read"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(backend.inject("kv-counter.wasm#0", Fault::Expire) >= 1);
    set(&backend, "hits.go").await;
    let report = first.await.expect("join");
    // Two right ends, by who is first: the host stops the instance on the
    // `lost` it observes, or the guest's write reaches the fence before
    // that and is refused there (the guest then fails on the refusal).
    let out = report.stdout_text();
    match &report.outcome {
        Outcome::LockLost(name) => assert_eq!(name, "counter"),
        Outcome::Exit(1) => assert!(
            out.contains("the declared lock counter no longer stands (lost): nothing was written"),
            "{out}"
        ),
        other => panic!("{other:?}: {out}"),
    }
    run_side_by_side(&runner, 1, &["count", "hits", "5"]).await;
    assert_eq!(stored(&backend, "hits").await, 5);
}

/// Bad input: each refusal names what was wrong; nothing of a refused batch
/// is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_key_value_input_is_refused_by_name_and_writes_nothing() {
    let backend = MemoryBackend::new();
    let runner = runner_with(
        Guest::KvCounter,
        RunnerConfig {
            backend: Arc::new(backend.clone()),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let report = runner.run(0, &["probe".into()]).await;
    assert_eq!(report.outcome, Outcome::Success, "{}", report.stdout_text());
    let out = report.stdout_text();
    for expected in [
        "open unknown: no-such-store",
        "empty key: other: invalid request: key is empty",
        "long key: other: limit exceeded: key is 513 bytes long; at most 512",
        "big value: other: limit exceeded: the value for key \"big\" is 65537 bytes long; at most 65536",
        "set-many 65: other: limit exceeded: a batch of 65 keys; at most 64",
        "keys after refusals: 0",
        "increment text: other: key \"text\" does not hold a decimal u64",
    ] {
        assert!(out.contains(expected), "{expected:?} not in:\n{out}");
    }
}

/// A guest that writes 10,000 keys: every write commits, the listing comes
/// in pages of 1,000 that the cursor walks to the end, and the host goes on
/// serving the next instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_keys_list_in_pages_and_the_host_goes_on() {
    let backend = MemoryBackend::new();
    let runner = holding_runner(Guest::KvCounter, &backend, &[]);
    let report = runner.run(0, &["flood".into(), "10000".into()]).await;
    assert_eq!(report.outcome, Outcome::Success, "{}", report.stdout_text());
    assert!(
        report.stdout_text().contains("listed 10000 in 11 pages"),
        "{}",
        report.stdout_text()
    );
    run_side_by_side(&runner, 1, &["count", "after", "3"]).await;
    assert_eq!(stored(&backend, "after").await, 3);
}

/// `wardlock run` on the lock service `engine` names (its flags), session
/// timeout [`SESSION_TIMEOUT`], with `flags`, `kv-counter`
/// and its `args`, as a process of its own.
fn kv_host(engine: &[String], flags: &[&str], args: &[&str]) -> HostProcess {
    kv_host_with_session(engine, SESSION_TIMEOUT, flags, args)
}

/// [`kv_host`] with a session timeout of `session` seconds.
fn kv_host_with_session(
    engine: &[String],
    session: &str,
    flags: &[&str],
    args: &[&str],
) -> HostProcess {
    let mut all = engine.to_vec();
    for flag in ["--session-timeout", session] {
        all.push(flag.to_owned());
    }
    all.extend(flags.iter().map(|f| f.to_string()));
    all.push(Guest::KvCounter.path().to_owned());
    all.push("--".to_owned());
    all.extend(args.iter().map(|a| a.to_string()));
    HostProcess::start(&all)
}

/// The flags of the lock service at `address` (`--zookeeper`, `--etcd`),
/// rooted at `/kv`.
fn rooted(flag: &str, address: String) -> Vec<String> {
    [
        flag.to_owned(),
        address,
        "--root".to_owned(),
        "/kv".to_owned(),
    ]
    .to_vec()
}

/// The session timeout of the hosts of the multi-host tests, in seconds.
const SESSION_TIMEOUT: &str = "2";

/// The session timeout of the paused host of the control without a lock,
/// in seconds: far longer than its pause, so its session outlives it and
/// its stale write reaches the store (at [`SESSION_TIMEOUT`] the session
/// could end during the pause, under load, and the write fail with it:
/// a clean-clone CI run of d35a214 saw that host exit 1).
const CONTROL_SESSION_TIMEOUT: &str = "60";

/// How long a host may wait for a paused host's session to end on the
/// server (the session timeout plus the server's own ticks).
const TAKEOVER: Duration = Duration::from_secs(30);

/// The value of `key` as a fresh host reads it.
async fn read_on(engine: &[String], key: &str) -> String {
    let mut reader = kv_host(engine, &[], &["read", key]);
    let line = reader.line().await;
    assert_eq!(reader.exit_code().await, Some(0), "{line}");
    line.strip_prefix(&format!("{key}="))
        .unwrap_or_else(|| panic!("not a read of {key}: {line}"))
        .to_owned()
}

/// 2 hosts × 4 instances × 50 get-then-set updates: `hits` at the end.
async fn two_hosts_count(engine: &[String], flags: &[&str], key: &str) -> u32 {
    let mut hosts: Vec<HostProcess> = (0..2)
        .map(|_| {
            let mut flags = flags.to_vec();
            flags.extend(["--instances", "4", "--timeout", "120"]);
            kv_host(engine, &flags, &["count", key, "50"])
        })
        .collect();
    for host in &mut hosts {
        assert_eq!(host.exit_code().await, Some(0));
    }
    read_on(engine, key).await.parse().expect("a number")
}

/// The count: exactly 400 under `--hold counter` across two hosts;
/// without it the same guests lose updates.
async fn two_hosts_exact_under_hold_and_lossy_without(engine: &[String]) {
    assert_eq!(
        two_hosts_count(engine, &["--hold", "counter"], "held").await,
        400
    );
    let unlocked = two_hosts_count(engine, &[], "plain").await;
    assert!(
        unlocked < 400,
        "no update lost without the lock: {unlocked}"
    );
    let mut hosts: Vec<HostProcess> = (0..2)
        .map(|_| {
            let flags = ["--instances", "4", "--timeout", "120"];
            kv_host(engine, &flags, &["increment", "atomic", "100"])
        })
        .collect();
    for host in &mut hosts {
        assert_eq!(host.exit_code().await, Some(0));
    }
    assert_eq!(read_on(engine, "atomic").await, "800");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_of_key_value_counters_under_a_declared_lock_lose_no_update_on_zookeeper() {
    let server = ZkServer::start();
    two_hosts_exact_under_hold_and_lossy_without(&rooted("--zookeeper", server.address())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_of_key_value_counters_under_a_declared_lock_lose_no_update_on_postgres() {
    let server = PgServer::start();
    two_hosts_exact_under_hold_and_lossy_without(&["--postgres".into(), server.url()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_of_key_value_counters_under_a_declared_lock_lose_no_update_on_etcd() {
    let server = EtcdServer::start();
    two_hosts_exact_under_hold_and_lossy_without(&rooted("--etcd", server.address())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_of_key_value_counters_under_a_declared_lock_lose_no_update_on_valkey() {
    let server = RedisServer::start(Flavor::Valkey);
    two_hosts_exact_under_hold_and_lossy_without(&["--redis".into(), server.url()]).await;
}

/// Host A (`--hold counter` when `held`) reads `hits`, then is paused
/// (SIGSTOP): past its session when `held`, within it otherwise; host B
/// takes the lock (when `held`) and adds 100; A resumes and writes what it read plus 1000. Returns A's exit code and
/// `hits` at the end.
async fn paused_writer(engine: &[String], held: bool, key: &str) -> (Option<i32>, String) {
    let hold: &[&str] = if held { &["--hold", "counter"] } else { &[] };
    let session = if held {
        SESSION_TIMEOUT
    } else {
        CONTROL_SESSION_TIMEOUT
    };
    let mut paused = kv_host_with_session(engine, session, hold, &["hold-then-add", key, "1000"]);
    let mut first = paused.line().await;
    if held {
        assert!(first.starts_with("held: counter="), "{first}");
        first = paused.line().await;
    }
    assert_eq!(first, "read 0");
    paused.pause();
    let mut next = kv_host(engine, hold, &["count", key, "100"]);
    if held {
        let granted = next.line_within(TAKEOVER).await;
        assert!(granted.starts_with("held: counter="), "{granted}");
    }
    assert_eq!(next.exit_code().await, Some(0));
    let go = format!("{key}.go");
    assert_eq!(
        kv_host(engine, &[], &["set", &go, "1"]).exit_code().await,
        Some(0)
    );
    paused.resume();
    let code = paused.exit_code().await;
    (code, read_on(engine, key).await)
}

/// The pause the fence exists for: with `--hold`, B's 100 stands and A is
/// stopped (its write refused or never made); without it A's stale write
/// wipes B's work.
async fn a_paused_writer_cannot_overwrite_the_next_holder(engine: &[String]) {
    let (code, value) = paused_writer(engine, true, "fenced").await;
    assert_ne!(
        code,
        Some(0),
        "the paused instance went on after losing its lock"
    );
    assert_eq!(value, "100", "the next holder's work stands");
    let (code, value) = paused_writer(engine, false, "unfenced").await;
    assert_eq!(code, Some(0));
    assert_eq!(
        value, "1000",
        "without a declared lock the stale write wins"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_key_value_writer_cannot_overwrite_the_next_holder_on_zookeeper() {
    let server = ZkServer::start();
    a_paused_writer_cannot_overwrite_the_next_holder(&rooted("--zookeeper", server.address()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_key_value_writer_cannot_overwrite_the_next_holder_on_etcd() {
    let server = EtcdServer::start();
    a_paused_writer_cannot_overwrite_the_next_holder(&rooted("--etcd", server.address())).await;
}

/// On PostgreSQL the paused host's connection idles past its
/// `idle_session_timeout` (the session timeout): the server ends it and
/// frees the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_key_value_writer_cannot_overwrite_the_next_holder_on_postgres() {
    let server = PgServer::start();
    a_paused_writer_cannot_overwrite_the_next_holder(&["--postgres".into(), server.url()]).await;
}

/// On Valkey the paused host stops renewing its session key, which
/// expires; the next host's look finds the member dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_key_value_writer_cannot_overwrite_the_next_holder_on_valkey() {
    let server = RedisServer::start(Flavor::Redis);
    a_paused_writer_cannot_overwrite_the_next_holder(&["--redis".into(), server.url()]).await;
}

/// `wardlock serve --hold 'counters/{path}'` on ZooKeeper with a `wasi:http`
/// guest whose counters live in `wasi:keyvalue` (no wardlock import): two
/// serve hosts, 200 requests over 4 keys, each key answers exactly 1 to 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_hosts_of_a_key_value_guest_under_a_declared_lock_per_key_lose_no_update() {
    const KEYS: usize = 4;
    const REQUESTS: usize = 200;
    let zk = ZkServer::start();
    let address = zk.address();
    let args = [
        "--zookeeper",
        &address,
        "--root",
        "/kv-serve",
        "--hold",
        "counters/{path}",
        Guest::HttpKvCounter.path(),
    ];
    let hosts = [Server::start(&args).await, Server::start(&args).await];
    let values = counts_per_key(&hosts, KEYS, REQUESTS, "?hold-ms=1").await;
    let expected: Vec<u64> = (1..=(REQUESTS / KEYS) as u64).collect();
    for (key, answers) in values {
        assert_eq!(answers, expected, "key {key}: lost or repeated updates");
    }
}
