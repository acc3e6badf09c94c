//! The backend conformance suite (`wardlock_tests::conformance`) on every
//! backend, from its one list of checks: on the in-memory backend one test per
//! check, plus the whole suite in sequence; on a real ZooKeeper server the whole
//! suite in sequence (one server for all checks, not one each), then no lock node
//! may be left.

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::MemoryBackend;
use wardlock_tests::conformance::{self, Subject};
use wardlock_tests::probe::{MemoryProbe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;

use crate::zookeeper::{ROOT, assert_no_lock_nodes, backend};

fn memory() -> Subject {
    let backend = MemoryBackend::new();
    Subject {
        backend: Arc::new(backend.clone()),
        probe: Arc::new(MemoryProbe(backend)),
    }
}

macro_rules! memory_tests {
    ($($check:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $check() {
            conformance::checks::$check(&memory()).await;
        }
    )*};
}

wardlock_tests::conformance_checks!(memory_tests);

/// The whole suite in one go, as the ZooKeeper test runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_in_sequence() {
    conformance::all(&memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_backend_conforms() {
    let server = ZkServer::start();
    let backend = backend(&server.address(), Duration::from_secs(10)).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let subject = Subject {
        backend: Arc::new(backend),
        probe: Arc::new(ZkProbe::connect(&server.address(), ROOT).await),
    };
    conformance::all(&subject).await;
    drop(subject);
    assert_no_lock_nodes(&probe).await;
}
