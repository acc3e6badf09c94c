//! The watch kept over each ZooKeeper session while it lives: heartbeats that keep
//! "last heard" fresh (see [`wardlock_backend::liveness`]), the local end of a session the
//! server may have expired, and reconciliation — after every observed reconnect
//! and periodically, since the client's state watcher keeps only the latest state
//! and a quick Disconnected → SyncConnected can pass unseen.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::MissedTickBehavior;
use zookeeper_client::SessionState;

use super::super::Shared;
use super::super::connection::ZkSession;
use super::reconcile::reconcile;
use super::reconnect;
use wardlock_backend::liveness::SessionHealth;

/// Reconcile at least this often (and after every reconnect seen).
const RECONCILE_EVERY: Duration = Duration::from_secs(10);

/// Watches `session` for as long as it and the backend live.
pub(crate) async fn monitor(shared: Weak<Shared>, session: Weak<ZkSession>) {
    let Some((generation, liveness, mut state)) = session
        .upgrade()
        .map(|s| (s.generation, s.liveness.clone(), s.client.state_watcher()))
    else {
        return;
    };
    let mut beat = tokio::time::interval(liveness.heartbeat_interval());
    beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut reconcile_at = tokio::time::Instant::now() + RECONCILE_EVERY;
    let mut suspended = false;
    loop {
        tokio::select! {
            _ = beat.tick() => {}
            now = state.changed() => {
                if now.is_terminated() {
                    log_end(generation, now);
                    // Subscribers to this session's grants learn they are lost.
                    liveness.end();
                    forget_and_reconnect(&shared, generation);
                    return;
                }
            }
            () = liveness.until_ended() => {}
            // The clock's end, which a tick may pass by a tenth of the timeout.
            () = tokio::time::sleep_until(liveness.deadline()) => {}
        }
        let (Some(shared_now), Some(session_now)) = (shared.upgrade(), session.upgrade()) else {
            return;
        };
        match session_now.health() {
            SessionHealth::Ended => {
                tracing::warn!(
                    generation,
                    timeout = ?liveness.timeout(),
                    "no answer from ZooKeeper within the session timeout; the session may have expired and its locks are lost"
                );
                drop(session_now);
                forget_and_reconnect(&shared, generation);
                return;
            }
            SessionHealth::Suspended if !suspended => {
                suspended = true;
                tracing::warn!(generation, "ZooKeeper connection lost; locks are suspended");
            }
            SessionHealth::Live if suspended => {
                suspended = false;
                tracing::info!(generation, "ZooKeeper connection restored");
                reconcile_at = tokio::time::Instant::now();
            }
            _ => {}
        }
        // Heartbeats are not awaited here: a request stuck behind a partition must
        // not stop the next one; each ends with the connection at the latest.
        let heartbeat = session_now.heartbeat();
        let timeout = liveness.timeout();
        shared_now.spawn(async move {
            let _ = tokio::time::timeout(timeout, heartbeat).await;
        });
        if !suspended && tokio::time::Instant::now() >= reconcile_at {
            reconcile_at = tokio::time::Instant::now() + RECONCILE_EVERY;
            drop(session_now);
            reconcile(&shared_now, generation).await;
        }
    }
}

/// Forgets an ended session and starts connecting its successor at once (a
/// session closed at shutdown has none).
fn forget_and_reconnect(shared: &Weak<Shared>, generation: u64) {
    if let Some(shared) = shared.upgrade() {
        shared.connection.forget(generation);
        reconnect::start(&shared);
    }
}

/// A session closed by this host (its backend dropped, e.g. at a normal exit) is
/// routine; an expired or refused one means locks were lost.
fn log_end(generation: u64, state: SessionState) {
    if state == SessionState::Closed {
        tracing::debug!(generation, "ZooKeeper session closed");
    } else {
        tracing::warn!(
            generation,
            ?state,
            "ZooKeeper session ended; its locks are lost"
        );
    }
}
