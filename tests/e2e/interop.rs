//! Interop with the real Apache Curator (Java) and kazoo (Python) on the same lock
//! paths, for every dialect: no lost update, shared holders overlap and exclusive
//! ones never do, Curator's downgrade keeps writers out, a dead foreign holder hands
//! over when its session ends, and `wardlock status` shows the queue.

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::{BackendError, LockBackend, Mode};
use wardlock_tests::TEST_WAIT_LIMIT;
use wardlock_tests::interop::Foreign;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{
    Guest, assert_success, lockctl_runner, name, run_instances, runner_in, spawn_acquire, spawn_run,
};
use wardlock_zookeeper::{Dialect, ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock";

/// A foreign client family and how it names its lock kinds.
#[derive(Clone, Copy)]
struct Side {
    dialect: Dialect,
    write: &'static str,
    read: Option<&'static str>,
}

const CURATOR_RW: Side = Side {
    dialect: Dialect::CuratorRw,
    write: "rw-write",
    read: Some("rw-read"),
};
const CURATOR_MUTEX: Side = Side {
    dialect: Dialect::CuratorMutex,
    write: "mutex",
    read: None,
};
// kazoo's `WriteLock` is the write half of its read/write pair; its plain `Lock`
// ignores `__rlock__` nodes (a mutex among `__lock__` nodes only).
const KAZOO: Side = Side {
    dialect: Dialect::Kazoo,
    write: "write",
    read: Some("read"),
};

impl Side {
    fn foreign(self, server: &ZkServer, lock: &str, kind: &str, command: &[&str]) -> Foreign {
        let path = format!("{ROOT}/{lock}");
        match self.dialect {
            Dialect::Kazoo => Foreign::kazoo(&server.address(), &path, kind, command),
            _ => Foreign::curator(&server.address(), &path, kind, command),
        }
    }
}

async fn backend(server: &ZkServer, dialect: Dialect) -> ZooKeeperBackend {
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .dialect(dialect);
    ZooKeeperBackend::connect(config).await.expect("backend")
}

/// A fresh server, a backend on it in `dialect` and a probe of its lock nodes.
async fn start(dialect: Dialect) -> (ZkServer, ZooKeeperBackend, ZkProbe) {
    let server = ZkServer::start();
    let backend = backend(&server, dialect).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    (server, backend, probe)
}

/// One test per foreign side: `test_per_side!(check: test_name => SIDE, ...)`
/// runs `check(SIDE)` as `test_name`.
macro_rules! test_per_side {
    ($check:ident: $($test:ident => $side:expr),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            $check($side).await;
        }
    )*};
}

/// The foreign client and four counter guests increment one file under one lock.
async fn counter_is_exact(side: Side) {
    let server = ZkServer::start();
    let backend = backend(&server, side.dialect).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("count");
    let foreign = side.foreign(
        &server,
        "shared-counter",
        side.write,
        &["counter", "40", file.to_str().expect("utf-8")],
    );
    let runner = runner_in(
        Guest::Counter,
        Arc::new(backend.clone()),
        dir.path(),
        Some(Duration::from_secs(120)),
    );
    let reports = run_instances(&runner, 4, &["shared-counter", "20", "/data/count"]).await;
    reports.iter().for_each(assert_success);
    foreign.finish().await;
    let count = std::fs::read_to_string(&file).expect("count");
    assert_eq!(
        count.trim(),
        "120",
        "lost updates between wardlock and {}",
        side.dialect
    );
}

test_per_side!(counter_is_exact:
    curator_rw_counter_is_exact => CURATOR_RW,
    curator_mutex_counter_is_exact => CURATOR_MUTEX,
    kazoo_counter_is_exact => KAZOO,
    kazoo_plain_lock_counter_is_exact => Side { write: "lock", ..KAZOO },
);

/// Shared holders on both sides overlap; exclusive ones never do.
async fn modes_interlock(side: Side) {
    let server = ZkServer::start();
    let backend = backend(&server, side.dialect).await;
    let ours = backend.open_session("ours");
    let lock = name("modes");

    // Foreign exclusive holder: we get nothing.
    let mut writer = side.foreign(&server, "modes", side.write, &["hold"]);
    writer.expect("holding").await;
    assert_eq!(
        ours.try_acquire(&lock, Mode::Exclusive).await.expect("try"),
        None
    );
    if side.read.is_some() {
        assert_eq!(
            ours.try_acquire(&lock, Mode::Shared).await.expect("try"),
            None
        );
    }
    writer.release().await;

    // Our exclusive holder: the foreign side gets nothing.
    let held = ours
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("exclusive");
    side.foreign(&server, "modes", side.write, &["try"])
        .expect("busy")
        .await;
    if let Some(read) = side.read {
        side.foreign(&server, "modes", read, &["try"])
            .expect("busy")
            .await;
    }
    ours.release(held.id).expect("release");

    let Some(read) = side.read else {
        assert!(matches!(
            ours.try_acquire(&lock, Mode::Shared).await,
            Err(BackendError::Unsupported(_))
        ));
        return;
    };
    // Foreign reader: we read alongside it but cannot write.
    let mut reader = side.foreign(&server, "modes", read, &["hold"]);
    reader.expect("holding").await;
    let shared = ours
        .try_acquire(&lock, Mode::Shared)
        .await
        .expect("try")
        .expect("shared alongside");
    assert_eq!(
        ours.try_acquire(&lock, Mode::Exclusive).await.expect("try"),
        None
    );
    ours.release(shared.id).expect("release");
    reader.release().await;

    // Our reader: the foreign side reads alongside, cannot write.
    let shared = ours
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("shared");
    let mut foreign_reader = side.foreign(&server, "modes", read, &["try"]);
    foreign_reader.expect("acquired").await;
    side.foreign(&server, "modes", side.write, &["try"])
        .expect("busy")
        .await;
    foreign_reader.release().await;
    ours.release(shared.id).expect("release");
}

test_per_side!(modes_interlock:
    curator_rw_modes_interlock => CURATOR_RW,
    curator_mutex_modes_interlock => CURATOR_MUTEX,
    kazoo_modes_interlock => KAZOO,
);

/// Curator's downgrade (write, then read, then release write) keeps wardlock
/// writers out until the read lock goes, while wardlock readers may join.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_downgrade_keeps_writers_out() {
    let (server, backend, probe) = start(Dialect::CuratorRw).await;
    let ours = backend.open_session("ours");
    let lock = name("downgrade");
    let mut curator = CURATOR_RW.foreign(&server, "downgrade", "rw-write", &["downgrade"]);
    curator.expect("downgraded").await;
    assert_eq!(
        ours.try_acquire(&lock, Mode::Exclusive).await.expect("try"),
        None
    );
    let read = ours
        .try_acquire(&lock, Mode::Shared)
        .await
        .expect("try")
        .expect("reader joins");
    ours.release(read.id).expect("release");
    let writer = spawn_acquire(backend.open_session("writer"), "downgrade", Mode::Exclusive);
    probe.wait_len("downgrade", 2).await;
    assert!(
        !writer.is_finished(),
        "a wardlock writer got in beside Curator's read lock"
    );
    curator.release().await;
    let (_session, grant) = writer.await.expect("writer");
    assert!(grant.is_ok(), "{grant:?}");
}

/// A foreign holder killed outright: its lock passes to a waiting wardlock guest
/// once its ZooKeeper session (2 s) expires.
async fn dead_foreign_holder_hands_over(side: Side) {
    let (server, backend, probe) = start(side.dialect).await;
    let mut holder = side.foreign(&server, "dying", side.write, &["hold-forever"]);
    holder.expect("holding").await;
    let runner = lockctl_runner(Arc::new(backend.clone()));
    let guest = spawn_run(&runner, 0, &["acquire exclusive - dying"]);
    probe.wait_len("dying", 2).await;
    holder.kill().await;
    let report = guest.await.expect("guest");
    assert!(report.outcome.is_success(), "{:?}", report.outcome);
    assert!(
        report.stdout_text().starts_with("h1 token="),
        "{}",
        report.stdout_text()
    );
}

test_per_side!(dead_foreign_holder_hands_over:
    dead_curator_holder_hands_over => CURATOR_RW,
    dead_curator_mutex_holder_hands_over => CURATOR_MUTEX,
    dead_kazoo_holder_hands_over => KAZOO,
);

/// `wardlock status` shows a Curator holder first and queued guests behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_curator_holder_and_queued_guests() {
    // Built first: the guests below wait only so long.
    let wardlock = wardlock_tests::serve::wardlock_bin();
    let (server, backend, probe) = start(Dialect::CuratorRw).await;
    let mut curator = CURATOR_RW.foreign(&server, "watched", "rw-write", &["hold"]);
    curator.expect("holding").await;
    let runner = lockctl_runner(Arc::new(backend.clone()));
    let mut guests = Vec::new();
    for (i, mode) in ["exclusive", "shared"].into_iter().enumerate() {
        guests.push(spawn_run(
            &runner,
            i,
            &[&format!("acquire {mode} - watched")],
        ));
        probe.wait_len("watched", i + 2).await;
    }
    let queue = backend.queue(&name("watched")).await.expect("queue");
    assert_eq!(queue.len(), 3, "{queue:#?}");
    assert!(
        queue[0].holds && queue[0].mode == Some(Mode::Exclusive),
        "{queue:#?}"
    );
    assert_ne!(
        Some(queue[0].session),
        backend.session_id(),
        "the holder is Curator's session"
    );
    for (waiter, mode) in queue[1..].iter().zip([Mode::Exclusive, Mode::Shared]) {
        assert!(!waiter.holds && waiter.mode == Some(mode), "{queue:#?}");
        assert!(
            waiter.data.contains("lockctl.wasm#"),
            "owner description: {:?}",
            waiter.data
        );
        assert_eq!(Some(waiter.session), backend.session_id());
    }
    // `wardlock status` shows the same queue, engine-neutral: Curator's
    // node holding, the guests' two waiting in order.
    let status = std::process::Command::new(wardlock)
        .args([
            "status",
            "--zookeeper",
            &server.address(),
            "--json",
            "watched",
        ])
        .output()
        .expect("run wardlock status");
    assert!(status.status.success(), "{status:?}");
    let report: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
    assert_eq!(report["engine"], "zookeeper", "{report}");
    assert_eq!(report["location"], "/wardlock/watched", "{report}");
    assert_eq!(
        (report["holders"].as_u64(), report["waiters"].as_u64()),
        (Some(1), Some(2)),
        "{report}"
    );
    for (row, node) in queue.iter().enumerate() {
        assert_eq!(
            report["contenders"][row]["node"],
            node.node.as_str(),
            "{report}"
        );
    }
    assert_eq!(report["contenders"][2]["mode"], "shared", "{report}");
    let owner = report["contenders"][1]["owner"]
        .as_str()
        .unwrap_or_default();
    assert!(owner.contains("lockctl.wasm#"), "{report}");
    curator.release().await;
    for guest in guests {
        assert!(guest.await.expect("guest").outcome.is_success());
    }
}
