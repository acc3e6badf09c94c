//! The node engine against wardlock's conformance kit: every check of the
//! kit's one list, one test each, with host-local hand-off on (the engine's
//! default). The kit asks the engine what it offers (locks and downgrade);
//! the checks of what it lacks see it answer `Unsupported`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use wardlock_conformance::{Probe, Subject, TEST_WAIT_LIMIT, name};
use wardlock_node_engine::{NodeBackend, NodeConfig, Store};

/// Counts a lock's contenders where this engine keeps them: in the host's
/// hand-off task (its guests share one node). With none left there, the
/// host's node must be gone from the store too.
struct NodeProbe(NodeBackend);

impl NodeProbe {
    async fn contenders(&self, lock: &str) -> usize {
        let lock = name(lock);
        match self.0.local_contenders(&lock).await {
            0 => self.0.nodes(&lock).len(),
            local => local,
        }
    }
}

#[async_trait]
impl Probe for NodeProbe {
    async fn wait_len(&self, lock: &str, len: usize) {
        // The task's count is asked for, not pushed: ask until it fits.
        let deadline = tokio::time::Instant::now() + TEST_WAIT_LIMIT;
        loop {
            let now = self.contenders(lock).await;
            if now == len {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{lock}: {now} contenders, expected {len}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

fn subject() -> Subject {
    let backend = NodeBackend::new(Store::new(), NodeConfig::default());
    Subject::new(Arc::new(backend.clone()), Arc::new(NodeProbe(backend)))
}

macro_rules! kit_tests {
    ($($check:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $check() {
            wardlock_conformance::checks::$check(&subject()).await;
        }
    )*};
}

wardlock_conformance::conformance_checks!(kit_tests);
