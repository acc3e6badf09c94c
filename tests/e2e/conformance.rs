//! The backend conformance suite (`wardlock_tests::conformance`) on every
//! backend, from its one list of checks: on the in-memory backend one test per
//! check, plus the whole suite in sequence; on a real ZooKeeper server the whole
//! suite in sequence (one server for all checks, not one each), then no lock node
//! may be left.

use std::sync::Arc;

use wardlock_host::{Health, LockBackend, LockName, Mode};
use wardlock_tests::conformance::{self, Subject};
use wardlock_tests::probe::{HandoffProbe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_zookeeper::{AUTO_SESSIONS, LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

use crate::zookeeper::{ROOT, assert_no_lock_nodes, start};

macro_rules! memory_tests {
    ($($check:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $check() {
            conformance::checks::$check(&Subject::memory()).await;
        }
    )*};
}

wardlock_conformance::conformance_checks!(memory_tests);

/// The whole suite in one go, as the ZooKeeper test runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_in_sequence() {
    conformance::all(&Subject::memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_backend_conforms() {
    let (server, backend, probe) = start().await;
    let subject = Subject::new(
        Arc::new(backend),
        Arc::new(ZkProbe::connect(&server.address(), ROOT).await),
    );
    conformance::all(&subject).await;
    drop(subject);
    assert_no_lock_nodes(&probe).await;
}

/// The same suite with host-local hand-off and a pool of three ZooKeeper
/// sessions: the backend's guests queue in the host's task and share one node
/// per lock, each lock on its session; afterwards no node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_backend_with_local_handoff_and_a_session_pool_conforms() {
    let server = ZkServer::start();
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .sessions(3)
        .local_handoff(LocalHandoff::default());
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let subject = Subject::new(Arc::new(backend.clone()), Arc::new(HandoffProbe(backend)));
    conformance::all(&subject).await;
    drop(subject);
    assert_no_lock_nodes(&probe).await;
}

/// The suite on what `wardlock run` and `serve` use by default: host-local
/// hand-off and sessions opened on demand (up to [`AUTO_SESSIONS`]). One
/// name keeps the host on one session; the suite's many names open more,
/// never more than the bound, and the health stays `Connected` with
/// sessions not yet opened. Afterwards no node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_backend_with_sessions_on_demand_conforms() {
    let server = ZkServer::start();
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .sessions_on_demand(AUTO_SESSIONS)
        .local_handoff(LocalHandoff::default());
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    assert_eq!(backend.open_sessions(), 1, "connect opens the first only");
    assert_eq!(backend.health(), Health::Connected);
    let session = backend.open_session("one name");
    let lock = LockName::new("on-demand/one").expect("valid");
    for _ in 0..3 {
        let grant = session
            .acquire(&lock, Mode::Exclusive, None)
            .await
            .expect("grant");
        session.release(grant.id).expect("release");
    }
    assert!(
        backend.open_sessions() <= 2,
        "one name, one more session at most"
    );
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let subject = Subject::new(
        Arc::new(backend.clone()),
        Arc::new(HandoffProbe(backend.clone())),
    );
    conformance::all(&subject).await;
    drop(subject);
    let open = backend.open_sessions();
    assert!((2..=AUTO_SESSIONS).contains(&open), "{open} sessions open");
    assert_eq!(backend.health(), Health::Connected);
    drop(session);
    assert_no_lock_nodes(&probe).await;
}
