//! Ending a backend at host shutdown: finish releases, then close the session.
//!
//! Closing the ZooKeeper session (instead of letting it time out) makes the
//! server delete every ephemeral node of the session at once, so a lock whose
//! release was still in flight is not blocked for a whole session timeout.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::SessionState;

use super::super::Shared;

/// Longest wait for in-flight deletes before closing anyway (closing deletes
/// whatever is left).
const DRAIN_LIMIT: Duration = Duration::from_secs(3);
/// Longest wait for the server to acknowledge the close.
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// Gives cached locks up, waits (bounded) until no node is tracked, then
/// closes the current session.
pub(crate) async fn shutdown(shared: &Arc<Shared>) {
    // A cached node would otherwise be kept until its time runs out.
    shared.local_locks.drop_caches();
    let drained = tokio::time::timeout(DRAIN_LIMIT, async {
        loop {
            let idle = shared.idle.notified();
            if shared.tracked().is_empty() {
                return;
            }
            idle.await;
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            "releases still in flight at shutdown; closing the ZooKeeper session frees them"
        );
    }
    let Some(session) = shared.connection.close() else {
        return;
    };
    let mut state = session.client.state_watcher();
    // The client closes its session when its last handle goes.
    drop(session);
    let closed = tokio::time::timeout(CLOSE_LIMIT, async {
        loop {
            let current = state.changed().await;
            if current.is_terminated() || current == SessionState::Closed {
                return;
            }
        }
    })
    .await;
    if closed.is_err() {
        tracing::warn!("the ZooKeeper session did not confirm its close; the server expires it");
    }
}
