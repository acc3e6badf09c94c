//! The ZooKeeper backend against a real ZooKeeper server started by each test:
//! herd-freedom measured on the server, release on guest death, session expiry,
//! server restart and a connection cut mid-create (the conformance suite on
//! ZooKeeper is in `conformance`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use wardlock_host::backend::BackendError;
use wardlock_host::runner::{Outcome, RunnerConfig};
use wardlock_host::{GrantId, GrantStatus, LockBackend, LockPolicy, LockSession, Mode};
use wardlock_tests::conformance::Subject;
use wardlock_tests::fenced::FencedStore;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::serve::spinning_holder;
use wardlock_tests::zookeeper::{ZkServer, backend_under, expire_session};
use wardlock_tests::{
    Acquired, Guest, assert_outcome, granted, hold, lockctl_runner, name, runner_with,
    spawn_acquire,
};
use wardlock_tests::{TEST_WAIT_LIMIT, timed_out_waits};
use wardlock_zookeeper::{ZooKeeperBackend, ZooKeeperConfig};
use zookeeper_client::{Acls, Client, CreateMode, SessionState};

use crate::cli::{run_counters, wardlock};

/// Where these tests' lock nodes live (`conformance` uses it too).
pub(crate) const ROOT: &str = "/wardlock-test";

pub(crate) async fn backend(address: &str, session_timeout: Duration) -> ZooKeeperBackend {
    let config = ZooKeeperConfig::new(address)
        .root(ROOT)
        .session_timeout(session_timeout);
    ZooKeeperBackend::connect(config)
        .await
        .expect("backend connects")
}

/// A [`Subject`] on `server`: a backend whose lock nodes live under `root`
/// (10 s session timeout) and a probe of them, for suites shared with the
/// in-memory backend (`languages`, `conform2`).
pub(crate) async fn subject(server: &ZkServer, root: &str) -> Subject {
    let config = ZooKeeperConfig::new(server.address())
        .root(root)
        .session_timeout(Duration::from_secs(10));
    let backend = ZooKeeperBackend::connect(config)
        .await
        .expect("backend connects");
    Subject::new(
        Arc::new(backend),
        Arc::new(ZkProbe::connect(&server.address(), root).await),
    )
}

/// A fresh server, a backend on it (10 s session timeout) and a probe of its
/// lock nodes.
pub(crate) async fn start() -> (ZkServer, ZooKeeperBackend, ZkProbe) {
    let server = ZkServer::start();
    let backend = backend(&server.address(), Duration::from_secs(10)).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    (server, backend, probe)
}

/// Queues an acquire of `lock` in `mode` in the background and waits until the
/// lock has `contenders` (this one the last).
async fn queue(
    backend: &ZooKeeperBackend,
    probe: &ZkProbe,
    lock: &str,
    mode: Mode,
    contenders: usize,
) -> JoinHandle<Acquired> {
    let task = spawn_acquire(
        backend.open_session(&format!("{mode:?} {contenders}")),
        lock,
        mode,
    );
    probe.wait_len(lock, contenders).await;
    task
}

/// No lock node is left anywhere under the root.
pub(crate) async fn assert_no_lock_nodes(probe: &ZkProbe) {
    let left: Vec<String> = probe
        .all_nodes()
        .await
        .into_iter()
        .filter(|n| n.contains("__WRIT__") || n.contains("__READ__"))
        .collect();
    assert!(left.is_empty(), "lock nodes left behind: {left:?}");
}

/// Waits until the backend's session reaches a state matching `wanted`.
async fn wait_state(
    backend: &ZooKeeperBackend,
    wanted: impl Fn(SessionState) -> bool,
) -> SessionState {
    let mut watcher = backend.state_watcher().expect("connected");
    let wait = async {
        loop {
            let state = watcher.state();
            if wanted(state) {
                return state;
            }
            watcher.changed().await;
        }
    };
    tokio::time::timeout(TEST_WAIT_LIMIT, wait)
        .await
        .expect("session state never came")
}

/// `grant`'s first status other than `suspended`, awaited through its
/// changes (bounded by [`TEST_WAIT_LIMIT`]).
async fn settled_status(session: &dyn LockSession, grant: GrantId) -> GrantStatus {
    let wait = async {
        let mut seen = session.status(grant);
        while seen == GrantStatus::Suspended {
            seen = session.status_changed(grant, seen).await;
        }
        seen
    };
    tokio::time::timeout(TEST_WAIT_LIMIT, wait)
        .await
        .expect("the grant stayed suspended")
}

/// A holder and 20 waiters: every waiter watches exactly one node, all different,
/// as the server itself reports (`wchp`: watched paths and their sessions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_watch_one_node_each() {
    let (server, backend, probe) = start().await;
    let holder = backend.open_session("holder");
    let held = holder
        .acquire(&name("herd"), Mode::Exclusive, None)
        .await
        .expect("hold");
    let mut waiters = Vec::new();
    for i in 0..20 {
        let backend = backend.clone();
        let mode = if i % 3 == 1 {
            Mode::Shared
        } else {
            Mode::Exclusive
        };
        waiters.push(tokio::spawn(async move {
            let session = backend.open_session(&format!("waiter {i}"));
            let grant = session
                .acquire(&name("herd"), mode, Some(TEST_WAIT_LIMIT))
                .await
                .expect("waiter");
            session.release(grant.id).expect("release");
        }));
        probe.wait_len("herd", i + 2).await;
    }
    // Watches are set right after each node's listing; wait until all 20 are in.
    let watched = tokio::time::timeout(TEST_WAIT_LIMIT, async {
        loop {
            let watched = lock_node_watches(&server.four_letter("wchp"));
            if watched.len() >= 20 {
                return watched;
            }
            // The server announces no event for a watch being set: poll its report.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("20 watches");
    let paths: std::collections::HashSet<_> =
        watched.iter().map(|(path, _)| path.clone()).collect();
    eprintln!(
        "{{\"metric\":\"herd_watched_paths\",\"waiters\":20,\"paths\":{},\"watches\":{}}}",
        paths.len(),
        watched.len()
    );
    assert_eq!(paths.len(), 20, "distinct watched lock nodes: {watched:?}");
    assert!(
        watched.iter().all(|(_, sessions)| *sessions == 1),
        "{watched:?}"
    );
    holder.release(held.id).expect("release");
    for waiter in waiters {
        waiter.await.expect("waiter task");
    }
    probe.wait_len("herd", 0).await;
    assert_no_lock_nodes(&probe).await;
}

/// Parses `wchp`: each watched path followed by indented session ids; returns the
/// lock-node paths and how many sessions watch each.
fn lock_node_watches(wchp: &str) -> Vec<(String, usize)> {
    let mut result: Vec<(String, usize)> = Vec::new();
    for line in wchp.lines() {
        if line.starts_with('/') {
            result.push((line.trim().to_owned(), 0));
        } else if line.trim().starts_with("0x")
            && let Some(last) = result.last_mut()
        {
            last.1 += 1;
        }
    }
    result.retain(|(path, _)| path.contains("__WRIT__") || path.contains("__READ__"));
    result
}

/// A guest trapping while holding: its waiter gets the lock within milliseconds,
/// long before the 10 s session timeout would have freed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trapped_holder_hands_over_before_session_timeout() {
    let server = ZkServer::start();
    let session_timeout = Duration::from_secs(10);
    let backend = backend(&server.address(), session_timeout).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let gate_session = backend.open_session("gate");
    let gate = gate_session
        .acquire(&name("gate"), Mode::Exclusive, None)
        .await
        .expect("gate");
    let runner = lockctl_runner(Arc::new(backend.clone()));
    let guest = tokio::spawn(async move {
        let args = [
            "acquire exclusive - dying",
            "acquire exclusive - gate",
            "trap",
        ]
        .map(String::from);
        let report = runner.run(0, &args).await;
        (report, Instant::now())
    });
    probe.wait_len("gate", 2).await;
    let waiter = {
        let backend = backend.clone();
        tokio::spawn(async move {
            let session = backend.open_session("waiter");
            let grant = session
                .acquire(&name("dying"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await;
            (session, grant, Instant::now())
        })
    };
    probe.wait_len("dying", 2).await;
    gate_session.release(gate.id).expect("gate");
    let (report, ended) = guest.await.expect("guest");
    assert_outcome!(report, Outcome::Trap(_));
    let (_session, grant, granted) = waiter.await.expect("waiter");
    assert!(grant.is_ok(), "{grant:?}");
    let latency = granted.saturating_duration_since(ended);
    eprintln!(
        "{{\"metric\":\"trap_to_grant_us\",\"value\":{}}}",
        latency.as_micros()
    );
    assert!(latency < session_timeout / 10, "hand-over took {latency:?}");
}

/// A guest killed at its deadline while queued leaves no node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_killed_while_queued_leaves_no_node() {
    let (_server, backend, probe) = start().await;
    let holder = backend.open_session("holder");
    let held = holder
        .acquire(&name("queued"), Mode::Exclusive, None)
        .await
        .expect("hold");
    let runner = runner_with(
        Guest::Misbehave,
        RunnerConfig {
            backend: Arc::new(backend.clone()),
            policy: Arc::new(LockPolicy::new()),
            timeout: Some(Duration::from_millis(500)),
            ..RunnerConfig::default()
        },
    );
    let report = runner
        .run(0, &["queue-forever".into(), "queued".into()])
        .await;
    assert_outcome!(report, Outcome::TimedOut(_));
    probe.wait_len("queued", 1).await;
    assert_eq!(probe.contenders("queued").await.len(), 1);
    holder.release(held.id).expect("release");
    probe.wait_len("queued", 0).await;
    assert_no_lock_nodes(&probe).await;
}

/// Forced session expiry: holders learn `lost`, new acquisitions use a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_reports_lost_and_reconnects() {
    let server = ZkServer::start();
    // Through a proxy, so that our client cannot take the session back while
    // another client attaches to it and closes it.
    let proxy = Proxy::start(server.address()).await;
    let backend = backend(&proxy.address(), Duration::from_secs(10)).await;
    let session = backend.open_session("holder");
    let grant = session
        .acquire(&name("expiring"), Mode::Exclusive, None)
        .await
        .expect("hold");
    assert_eq!(session.status(grant.id), GrantStatus::Held);
    let mut store = FencedStore::default();
    assert!(store.write(grant.token), "the holder writes while held");
    let changed = session.status_changed(grant.id, GrantStatus::Held);
    let old_id = backend.session_id().expect("session");
    expire_session(&backend, &proxy, &server).await;
    assert_eq!(session.status(grant.id), GrantStatus::Lost);
    // A status subscriber was woken (by the suspension or the expiry), and a
    // new one learns `lost` at once.
    let first = tokio::time::timeout(TEST_WAIT_LIMIT, changed)
        .await
        .expect("subscriber woken");
    assert!(
        matches!(first, GrantStatus::Suspended | GrantStatus::Lost),
        "{first:?}"
    );
    let now = tokio::time::timeout(
        TEST_WAIT_LIMIT,
        session.status_changed(grant.id, GrantStatus::Held),
    )
    .await
    .expect("resolves at once");
    assert_eq!(now, GrantStatus::Lost);
    let other = backend.open_session("next");
    let next = other
        .acquire(&name("expiring"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire on a new session");
    assert!(next.token > grant.token);
    assert!(store.write(next.token), "the new holder writes");
    // A holder that ignored `lost` and wrote anyway is refused: 0 stale writes.
    assert!(!store.write(grant.token), "a stale write was accepted");
    assert_eq!((store.accepted, store.rejected), (2, 1));
    assert_ne!(
        backend.session_id(),
        Some(old_id),
        "a new ZooKeeper session"
    );
    assert_eq!(
        session.status(grant.id),
        GrantStatus::Lost,
        "the old grant stays lost"
    );
}

/// A server restart within the session timeout: locks survive; status goes
/// suspended, then held again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_suspends_then_restores() {
    let mut server = ZkServer::start();
    let backend = backend(&server.address(), Duration::from_secs(30)).await;
    let session = backend.open_session("holder");
    let grant = session
        .acquire(&name("restart"), Mode::Exclusive, None)
        .await
        .expect("hold");
    server.stop();
    wait_state(&backend, |s| s == SessionState::Disconnected).await;
    assert_eq!(session.status(grant.id), GrantStatus::Suspended);
    server.restart();
    wait_state(&backend, |s| s == SessionState::SyncConnected).await;
    // The grant's clock hears of the new connection a moment after the
    // client does (a CI run read `suspended` in between): its change is
    // awaited, and anything but `held` after `suspended` fails.
    assert_eq!(
        settled_status(session.as_ref(), grant.id).await,
        GrantStatus::Held
    );
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    assert_eq!(
        probe.contenders("restart").await.len(),
        1,
        "the lock node survived"
    );
    let rival = backend.open_session("rival");
    assert_eq!(
        rival
            .try_acquire(&name("restart"), Mode::Exclusive)
            .await
            .expect("try"),
        None
    );
    session.release(grant.id).expect("release");
    probe.wait_len("restart", 0).await;
}

/// Waits timed out at every moment around their queueing, from another
/// host than the holder's, leave no node, with a node per guest and with
/// host-local hand-off ([`wardlock_tests::timed_out_waits`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_timed_out_around_their_queueing_leave_no_node() {
    let server = ZkServer::start();
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    for handoff in [false, true] {
        let lock = format!("dropped-{handoff}");
        let holder = backend_under(&server, ROOT, handoff).await;
        let waiter = Arc::new(backend_under(&server, ROOT, handoff).await);
        let outcome =
            timed_out_waits::leave_the_lock_free(&holder, waiter.clone(), &name(&lock)).await;
        if let Err(why) = outcome {
            panic!(
                "hand-off {handoff}: {why}\nnodes: {:?}",
                probe.contenders(&lock).await
            );
        }
        probe.wait_len(&lock, 0).await;
    }
}

/// The connection is cut after the create reached the server but before its answer
/// came back: the backend finds its node by uuid, holds exactly one node, and a
/// cancelled acquire in the same situation leaves none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cut_mid_create_leaves_no_orphan() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let backend = backend(&proxy.address(), Duration::from_secs(20)).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    // A persistent parent, so the create is the only request that matters.
    for path in [ROOT.to_owned(), format!("{ROOT}/cut")] {
        let _ = probe
            .client
            .create(
                &path,
                b"",
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await;
    }

    proxy.swallow_replies(true);
    let acquiring = spawn_acquire(backend.open_session("cut"), "cut", Mode::Exclusive);
    probe.wait_len("cut", 1).await;
    proxy.cut();
    proxy.swallow_replies(false);
    let (session, grant) = acquiring.await.expect("acquire task");
    let grant = grant.expect("acquired after the reconnect");
    assert_eq!(
        probe.contenders("cut").await.len(),
        1,
        "exactly our node, no orphan"
    );
    session.release(grant.id).expect("release");
    probe.wait_len("cut", 0).await;

    proxy.swallow_replies(true);
    let cancelled = {
        let backend = backend.clone();
        tokio::spawn(async move {
            let session = backend.open_session("cancelled");
            let _ = session.acquire(&name("cut"), Mode::Exclusive, None).await;
        })
    };
    probe.wait_len("cut", 1).await;
    cancelled.abort();
    let _ = cancelled.await;
    proxy.cut();
    proxy.swallow_replies(false);
    probe.wait_len("cut", 0).await;
    assert_no_lock_nodes(&probe).await;
    let _ = probe.client.delete(&format!("{ROOT}/cut"), None).await;
}

/// `wardlock run --zookeeper` with 8 counter instances gives the exact count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_counter_on_zookeeper_is_exact() {
    let server = ZkServer::start();
    let address = server.address();
    let counted = run_counters(
        &["--zookeeper", &address, "--root", ROOT],
        "zk-counter",
        "15",
    )
    .await;
    assert_eq!(counted, (0, "120".to_owned()));
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    probe.wait_len("zk-counter", 0).await;
    // Nothing listening, and --require-backend: refused at once, not after
    // the (default, 10 s) session timeout during which the client would retry.
    let tried = Instant::now();
    let error = wardlock(&[
        "run",
        "--require-backend",
        "--zookeeper",
        "127.0.0.1:1",
        Guest::Counter.path(),
    ])
    .await
    .expect_err("no server there");
    let waited = tried.elapsed();
    let error = format!("{error:#}");
    assert!(
        error.contains("cannot connect to ZooKeeper at 127.0.0.1:1")
            && error.contains("connection refused by every host"),
        "{error}"
    );
    assert!(
        waited < Duration::from_secs(10),
        "waited {waited:?}: the session timeout, not the refusal"
    );
    // Without it the host starts anyway, and its guests' acquires fail at
    // once (`unavailable`) rather than wait out a timeout.
    let data = tempfile::tempdir().expect("data dir");
    let preopen = format!("{}::/data", data.path().display());
    let tried = Instant::now();
    let code = wardlock(&[
        "run",
        "--dir",
        &preopen,
        "--zookeeper",
        "127.0.0.1:1",
        Guest::Counter.path(),
        "--",
        "no-zookeeper",
        "1",
        "/data/count",
    ])
    .await
    .expect("run starts without its ZooKeeper");
    let waited = tried.elapsed();
    assert_eq!(code, 1, "the guest cannot have counted without a lock");
    assert!(
        !data.path().join("count").exists(),
        "counted without a lock"
    );
    // Failing at once, not after the (default, 10 s) session timeout a
    // waiting acquire would spend: the bound is that timeout.
    assert!(
        waited < Duration::from_secs(10),
        "waited {waited:?}: the session timeout, not an answer at once"
    );
}

/// `--zk-digest-file` reads the credentials from a file (not the command line,
/// where `ps` shows them): a host holding a lock with them leaves nodes a
/// stranger cannot list; a missing file is refused naming the flag, never
/// the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_credentials_come_from_a_file() {
    let server = ZkServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("zk.digest");
    std::fs::write(&file, "wardlock:s3cret\n").expect("digest file");
    let address = server.address();
    let file_arg = file.display().to_string();
    let flags = [
        "--zookeeper",
        address.as_str(),
        "--root",
        ROOT,
        "--zk-digest-file",
        file_arg.as_str(),
    ];
    let holder = spinning_holder(&flags, "from-file").await;
    let stranger = ZkProbe::connect(&address, ROOT).await;
    assert_eq!(
        stranger
            .client
            .list_children(&format!("{ROOT}/from-file"))
            .await,
        Err(zookeeper_client::Error::NoAuth),
        "the host's nodes carry the creator-only ACL"
    );
    drop(holder);
    let missing = dir.path().join("missing.digest").display().to_string();
    let refused = wardlock(&[
        "run",
        "--zookeeper",
        &address,
        "--zk-digest-file",
        &missing,
        Guest::Counter.path(),
    ])
    .await
    .expect_err("a missing digest file is refused");
    let refused = format!("{refused:#}");
    assert!(
        refused.contains("--zk-digest-file") && refused.contains("missing.digest"),
        "{refused}"
    );
}

/// With digest auth, wardlock's nodes carry the creator-only ACL: a client without
/// the credentials can neither delete a lock node nor list the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_auth_protects_lock_nodes() {
    let server = ZkServer::start();
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .digest_auth("wardlock:s3cret");
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let session = backend.open_session("guarded");
    let grant = session
        .acquire(&name("guarded"), Mode::Exclusive, None)
        .await
        .expect("hold");
    let queue = backend.queue(&name("guarded")).await.expect("queue");
    assert_eq!(queue.len(), 1);
    let node = format!("{ROOT}/guarded/{}", queue[0].node);
    let stranger = ZkProbe::connect(&server.address(), ROOT).await;
    assert_eq!(
        stranger.client.delete(&node, None).await,
        Err(zookeeper_client::Error::NoAuth)
    );
    assert_eq!(
        stranger
            .client
            .list_children(&format!("{ROOT}/guarded"))
            .await,
        Err(zookeeper_client::Error::NoAuth)
    );
    let insider = ZkProbe {
        client: Client::connector()
            .with_auth("digest", b"wardlock:s3cret")
            .connect(&server.address())
            .await
            .expect("authenticated probe"),
        root: ROOT.to_owned(),
    };
    assert_eq!(
        insider.contenders("guarded").await.len(),
        1,
        "the credentials grant access"
    );
    // A host with other credentials is refused for good: `Refused` (guests
    // see `denied`), at once, not `unavailable` and not after a timeout.
    let other = ZooKeeperBackend::connect(
        ZooKeeperConfig::new(server.address())
            .root(ROOT)
            .digest_auth("intruder:guess"),
    )
    .await
    .expect("other backend");
    let tried = Instant::now();
    let refused = other
        .open_session("intruder")
        .acquire(
            &name("guarded"),
            Mode::Exclusive,
            Some(Duration::from_secs(20)),
        )
        .await;
    assert!(
        matches!(&refused, Err(BackendError::Refused(why)) if why.contains("refused")),
        "{refused:?}"
    );
    assert!(
        tried.elapsed() < Duration::from_secs(5),
        "{:?}",
        tried.elapsed()
    );
    other.shutdown().await;
    session.release(grant.id).expect("release");
    insider.wait_len("guarded", 0).await;
}

/// Fencing tokens follow conflicts, readers included: readers granted after a
/// writer carry greater tokens than it, and the next writer a greater token than
/// every reader before it — also when the readers are released together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_exceed_every_earlier_conflicting_grant() {
    let (_server, backend, probe) = start().await;
    let (first, w1) = hold(&backend, "tokens", Mode::Exclusive).await;
    let r1 = queue(&backend, &probe, "tokens", Mode::Shared, 2).await;
    let r2 = queue(&backend, &probe, "tokens", Mode::Shared, 3).await;
    let w2 = queue(&backend, &probe, "tokens", Mode::Exclusive, 4).await;
    first.release(w1.id).expect("release w1");
    let (s1, g1) = granted("reader 1", r1).await;
    let (s2, g2) = granted("reader 2", r2).await;
    assert!(
        g1.token > w1.token && g2.token > w1.token,
        "{w1:?} {g1:?} {g2:?}"
    );
    // Released together.
    s1.release(g1.id).expect("release r1");
    s2.release(g2.id).expect("release r2");
    let (s3, g3) = granted("second writer", w2).await;
    assert!(
        g3.token > g1.token && g3.token > g2.token,
        "{g1:?} {g2:?} {g3:?}"
    );
    s3.release(g3.id).expect("release w2");
    probe.wait_len("tokens", 0).await;
}

/// Real downgrade on ZooKeeper: after exclusive → shared → release exclusive, a
/// reader queued before a writer gets in, the writer stays out until the shared
/// grants go, and its token exceeds theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downgrade_lets_readers_in_and_keeps_queued_writers_out() {
    let (_server, backend, probe) = start().await;
    let (owner, exclusive) = hold(&backend, "down", Mode::Exclusive).await;
    let reader = queue(&backend, &probe, "down", Mode::Shared, 2).await;
    let writer = queue(&backend, &probe, "down", Mode::Exclusive, 3).await;
    let shared = owner.downgrade(exclusive.id).await.expect("downgrade");
    assert!(shared.token > exclusive.token);
    owner.release(exclusive.id).expect("release exclusive");
    let (reader_session, read) = tokio::time::timeout(TEST_WAIT_LIMIT, granted("reader", reader))
        .await
        .expect("the reader gets in");
    assert!(!writer.is_finished(), "the queued writer got in");
    owner.release(shared.id).expect("release shared");
    reader_session.release(read.id).expect("release reader");
    let (session, grant) = granted("writer", writer).await;
    assert!(grant.token > shared.token && grant.token > read.token);
    session.release(grant.id).expect("release writer");
    probe.wait_len("down", 0).await;
}
