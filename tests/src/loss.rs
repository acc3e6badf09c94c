//! How soon a guest parked on a `subscribe` pollable (of a lock or a permit)
//! learns of an injected loss, on the in-memory backend, as the host sees it;
//! and the moment a native holder is told `lost`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::backend::memory::Fault;
use wardlock_host::runner::{InstanceReport, Runner};
use wardlock_host::{GrantId, GrantStatus, LockBackend, LockSession, MemoryBackend, Mode};

use crate::{assert_success, name, spawn_run, wait_counts};

/// Runs `rounds` instances of `runner` one after the other, each with
/// `commands`, which must take `held` (a lock or a semaphore), take the lock
/// `parked`, wait on `held`'s pollable and then take the lock `ack`, and end
/// by taking the lock `gate`. Once the guest holds `parked`, `held`'s grant is
/// expired (`Fault::Expire` on its owner); the time from that injection to
/// the host seeing `ack` taken is the round's reaction time.
///
/// Returns the reaction times, sorted, and the successful reports.
///
/// # Panics
/// When a step does not come within the test's wait limit or an instance
/// fails.
pub async fn loss_reactions(
    backend: &MemoryBackend,
    runner: &Arc<Runner>,
    rounds: usize,
    held: &str,
    commands: &[&str],
) -> (Vec<Duration>, Vec<InstanceReport>) {
    let native = backend.open_session("test");
    let (mut latencies, mut reports) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let gate = native
            .acquire(&name("gate"), Mode::Exclusive, None)
            .await
            .expect("gate");
        let guest = spawn_run(runner, round, commands);
        wait_counts(backend, "parked", 1, 0).await;
        let owner = backend.snapshot(&name(held))[0].owner.clone();
        let injected = Instant::now();
        assert_eq!(backend.inject(&owner, Fault::Expire), 1);
        wait_counts(backend, "ack", 1, 0).await;
        latencies.push(injected.elapsed());
        native.release(gate.id).expect("open the gate");
        let report = guest.await.expect("guest");
        assert_success(&report);
        reports.push(report);
    }
    latencies.sort();
    (latencies, reports)
}

/// Waits, from `seen`, until `grant` of `session` reads `lost` (through
/// `suspended` only) and returns when it did.
///
/// # Panics
/// When it is not told `lost` within `limit`, or is told anything else.
pub async fn lost_at(
    session: &dyn LockSession,
    grant: GrantId,
    seen: GrantStatus,
    limit: Duration,
) -> Instant {
    let told = tokio::time::timeout(limit, async {
        let mut now = seen;
        loop {
            now = session.status_changed(grant, now).await;
            match now {
                GrantStatus::Lost => return Instant::now(),
                GrantStatus::Suspended => {}
                other => panic!("{other:?} before lost"),
            }
        }
    })
    .await;
    told.unwrap_or_else(|_| panic!("not told lost within {limit:?}"))
}
