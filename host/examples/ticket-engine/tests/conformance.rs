//! The ticket engine against wardlock's conformance kit: every check, one
//! test each, from the kit's one list; checks of what the engine lacks
//! (semaphores, revocation, downgrade) see it answer `Unsupported`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use wardlock_conformance::{Probe, Subject, TEST_WAIT_LIMIT, name};
use wardlock_ticket_engine::{TicketBackend, TicketConfig};

/// Counts a lock's tickets (holders and waiters). The engine has no change
/// events, so the probe asks until the count fits, bounded by the kit's wait
/// limit.
struct TicketProbe(TicketBackend);

#[async_trait]
impl Probe for TicketProbe {
    async fn wait_len(&self, lock: &str, len: usize) {
        let lock = name(lock);
        let deadline = tokio::time::Instant::now() + TEST_WAIT_LIMIT;
        while self.0.queue_len(&lock) != len {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{lock} never had {len} tickets (has {})",
                self.0.queue_len(&lock)
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

fn subject() -> Subject {
    let backend = TicketBackend::new(TicketConfig::default());
    Subject::new(Arc::new(backend.clone()), Arc::new(TicketProbe(backend)))
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
