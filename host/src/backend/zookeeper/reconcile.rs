//! After a reconnect, make ZooKeeper agree with what the host tracks: an ephemeral
//! node of our session under the root that no guest tracks is an orphan (say, a
//! create whose answer was lost with the connection), and is deleted.

use std::sync::{Arc, Weak};

use zookeeper_client::{SessionState, StateWatcher};

use super::Shared;
use super::release;

/// Watches session `generation`'s state for as long as the session and the backend
/// live; reconciles after every reconnect.
pub(super) async fn monitor(shared: Weak<Shared>, generation: u64, mut state: StateWatcher) {
    let mut was_disconnected = false;
    loop {
        let now = state.changed().await;
        match now {
            SessionState::Disconnected => {
                tracing::warn!(generation, "ZooKeeper connection lost; locks are suspended");
                was_disconnected = true;
            }
            SessionState::SyncConnected if was_disconnected => {
                was_disconnected = false;
                tracing::info!(generation, "ZooKeeper connection restored");
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                reconcile(&shared, generation).await;
            }
            state if state.is_terminated() => {
                tracing::warn!(
                    generation,
                    ?state,
                    "ZooKeeper session ended; its locks are lost"
                );
                return;
            }
            _ => {}
        }
        if shared.strong_count() == 0 {
            return;
        }
    }
}

/// Deletes this session's untracked ephemeral nodes under the root.
pub(super) async fn reconcile(shared: &Arc<Shared>, generation: u64) {
    let Some(session) = shared.connection.session_of(generation) else {
        return;
    };
    let root = shared.connection.config().root.clone();
    let ephemerals = match session.client.list_ephemerals(&root).await {
        Ok(ephemerals) => ephemerals,
        Err(error) => {
            tracing::warn!(%error, "cannot list this session's ephemeral nodes to reconcile");
            return;
        }
    };
    let orphans: Vec<String> = {
        let tracked = shared.tracked();
        ephemerals
            .into_iter()
            .filter(|path| {
                let node = path.rsplit('/').next().unwrap_or_default();
                !tracked
                    .iter()
                    .any(|(g, prefix)| *g == generation && node.starts_with(prefix.as_str()))
            })
            .collect()
    };
    for path in orphans {
        tracing::warn!(%path, "deleting an orphan lock node of this session");
        release::delete_node(shared, generation, String::new(), path);
    }
}
