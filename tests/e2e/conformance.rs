//! The backend conformance suite on the in-memory backend, one test per check.

use std::sync::Arc;

use wardlock_host::MemoryBackend;
use wardlock_tests::conformance::{self, Subject};
use wardlock_tests::probe::MemoryProbe;

fn memory() -> Subject {
    let backend = MemoryBackend::new();
    Subject {
        backend: Arc::new(backend.clone()),
        probe: Arc::new(MemoryProbe(backend)),
    }
}

macro_rules! memory_conformance {
    ($($check:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $check() {
            conformance::$check(&memory()).await;
        }
    )*};
}

memory_conformance!(
    exclusive_excludes,
    shared_holders_overlap,
    grants_in_arrival_order,
    queued_writer_holds_back_readers,
    timeout_leaves_nothing_queued,
    cancelled_wait_leaves_nothing_queued,
    session_drop_releases_everything,
    tokens_increase_across_names_and_sessions,
    guest_counter_is_exact,
    guest_trap_hands_over,
    guest_sees_wit_semantics,
);

/// The whole suite in one go, as the ZooKeeper test runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_in_sequence() {
    conformance::all(&memory()).await;
}
