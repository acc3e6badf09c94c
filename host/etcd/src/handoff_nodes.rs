//! Host-local hand-off on etcd: the host's key of a hand-off task (the lock
//! recipe, the background delete, the remote-contender watch).

use std::sync::Arc;

use super::{Shared, recipe};
use wardlock_backend::Mode;
use wardlock_backend::handoff::{
    LocalLocks, NodeEngine, NodeFuture, NodeRequest, NodeSession, OwnedNode, WatchFuture,
};
use wardlock_backend::name::LockName;

/// The backend's etcd, as hand-off tasks use it.
pub(super) struct EtcdNodes {
    pub shared: Arc<Shared>,
}

impl NodeEngine for EtcdNodes {
    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn acquire_node(&self, request: NodeRequest) -> NodeFuture {
        let shared = self.shared.clone();
        Box::pin(async move {
            let (name, mode) = (&request.name, request.mode);
            recipe::acquire(&shared, name, mode, request.deadline, request.wait).await
        })
    }

    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>> {
        let lease = self.shared.leases.lease_of(generation)?;
        Some(lease)
    }

    fn release_node(&self, node: OwnedNode) {
        recipe::delete_key(&self.shared, node.generation, node.path);
    }

    fn remote_contender(&self, name: &LockName, node: &OwnedNode, mode: Mode) -> WatchFuture {
        Box::pin(recipe::remote_contender(
            self.shared.clone(),
            name.clone(),
            node.clone(),
            mode,
        ))
    }
}
