//! Host-local hand-off on Valkey/Redis: the host's queue member of a
//! hand-off task (the recipe, the background removal, the watch for a
//! contender of another host behind it).

use std::sync::Arc;

use wardlock_backend::Mode;
use wardlock_backend::handoff::{
    LocalLocks, NodeEngine, NodeFuture, NodeRequest, NodeSession, OwnedNode, WatchFuture,
};
use wardlock_backend::name::LockName;

use crate::{Shared, recipe, session};

/// The backend's server, as hand-off tasks use it.
pub(crate) struct ValkeyNodes {
    pub(crate) shared: Arc<Shared>,
}

impl NodeEngine for ValkeyNodes {
    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn acquire_node(&self, request: NodeRequest) -> NodeFuture {
        Box::pin(recipe::acquire(self.shared.clone(), request))
    }

    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>> {
        self.shared
            .session_of(generation)
            .map(session::as_node_session)
    }

    fn release_node(&self, node: OwnedNode) {
        let Some((name, member)) = self.shared.layout.parse_member_path(&node.path) else {
            return;
        };
        let shared = self.shared.clone();
        self.shared
            .runtime
            .spawn(async move { recipe::remove(&shared, &name, &member).await });
    }

    fn remote_contender(&self, name: &LockName, node: &OwnedNode, _mode: Mode) -> WatchFuture {
        Box::pin(recipe::contender_behind(
            self.shared.clone(),
            name.clone(),
            node.prefix.clone(),
            node.generation,
        ))
    }
}
