//! Make ZooKeeper agree with what the host tracks: an ephemeral node of our session
//! under the root that no guest tracks is an orphan (say, a create whose answer was
//! lost with the connection), and is deleted. Run by [`super::monitor`] after every
//! reconnect and periodically.

use std::sync::Arc;

use super::super::Shared;
use crate::recipe::release;

/// Deletes this session's untracked ephemeral nodes under the root.
///
/// # Cancellation safety
/// Cancel safe: deletes are handed to background tasks.
pub(crate) async fn reconcile(shared: &Arc<Shared>, generation: u64) {
    let Some(session) = shared.connection.session_of(generation) else {
        return;
    };
    let root = shared.connection.config().root.clone();
    // A follower we reconnected to may lag behind our own creates: sync first.
    let listed = match session.sync(&root).await {
        Ok(()) => session.client.list_ephemerals(&root).await,
        Err(error) => Err(error),
    };
    let ephemerals = match listed {
        Ok(ephemerals) => ephemerals,
        Err(error) => {
            tracing::debug!(%error, "cannot list this session's ephemeral nodes to reconcile");
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
