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
    )
    .server_state(probe.node_dump());
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
    let subject = Subject::new(Arc::new(backend.clone()), Arc::new(HandoffProbe(backend)))
        .server_state(probe.node_dump());
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
    )
    .server_state(probe.node_dump());
    conformance::all(&subject).await;
    drop(subject);
    let open = backend.open_sessions();
    assert!((2..=AUTO_SESSIONS).contains(&open), "{open} sessions open");
    assert_eq!(backend.health(), Health::Connected);
    drop(session);
    assert_no_lock_nodes(&probe).await;
}

/// An engine that never answers: every acquire and try waits forever.
struct Wedged;

struct WedgedSession;

impl LockBackend for Wedged {
    fn open_session(&self, _owner: &str) -> Box<dyn wardlock_host::LockSession> {
        Box::new(WedgedSession)
    }

    fn kind(&self) -> &'static str {
        "wedged"
    }
}

#[async_trait::async_trait]
impl wardlock_host::LockSession for WedgedSession {
    async fn acquire_request(
        &self,
        _request: wardlock_host::backend::Request<'_>,
        _timeout: Option<std::time::Duration>,
    ) -> Result<wardlock_host::Grant, wardlock_host::BackendError> {
        std::future::pending().await
    }

    async fn try_acquire_request(
        &self,
        _request: wardlock_host::backend::Request<'_>,
    ) -> Result<Option<wardlock_host::Grant>, wardlock_host::BackendError> {
        std::future::pending().await
    }

    fn release(&self, grant: wardlock_host::GrantId) -> Result<(), wardlock_host::BackendError> {
        Err(wardlock_host::BackendError::UnknownGrant(grant.0))
    }

    fn status(&self, _grant: wardlock_host::GrantId) -> wardlock_host::GrantStatus {
        wardlock_host::GrantStatus::Released
    }

    fn status_changed(
        &self,
        _grant: wardlock_host::GrantId,
        _seen: wardlock_host::GrantStatus,
    ) -> wardlock_host::backend::StatusChange {
        Box::pin(std::future::pending())
    }
}

/// A wedged engine fails the kit within the subject's bound, and the failure
/// names the check, the engine, what the check waited for and the server's
/// state; the check's own waits (a grant without a timeout) would otherwise
/// hang the test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wedged_engine_fails_the_kit_within_its_bound() {
    let limit = std::time::Duration::from_millis(300);
    let started = std::time::Instant::now();
    let run = tokio::spawn(async move {
        let subject = Subject::new(
            Arc::new(Wedged),
            Arc::new(wardlock_tests::conformance::MemoryProbe(
                wardlock_host::MemoryBackend::new(),
            )),
        )
        .check_limit(limit)
        .server_state(|| async { "no lock anywhere (the wedged engine's dump)".to_owned() });
        conformance::all(&subject).await;
    });
    let failure = tokio::time::timeout(10 * limit, run)
        .await
        .expect("the kit's bound ends the run")
        .expect_err("a wedged engine fails the kit");
    let took = started.elapsed();
    let message = failure
        .into_panic()
        .downcast::<String>()
        .map(|m| *m)
        .unwrap_or_default();
    assert!(
        message.contains("conformance check `exclusive_excludes`")
            && message.contains("`wedged` engine")
            && message.contains(&format!("{limit:?}"))
            && message.contains("exclusive grant of conf/excl to session `a`")
            && message.contains("the wedged engine's dump"),
        "{message}"
    );
    assert!(took >= limit, "failed after {took:?}, before its bound");
}
