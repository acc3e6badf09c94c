//! Host-local hand-off on PostgreSQL: the host's advisory lock of a hand-off
//! task (the recipe, the background unlock, the `pg_locks` watch for another
//! client's waiter).

use std::sync::Arc;

use wardlock_backend::Mode;
use wardlock_backend::handoff::{
    LocalLocks, NodeEngine, NodeFuture, NodeRequest, NodeSession, OwnedNode, WatchFuture,
};
use wardlock_backend::name::LockName;

use crate::{Shared, recipe};

/// The backend's PostgreSQL, as hand-off tasks use it.
pub(crate) struct PgNodes {
    pub(crate) shared: Arc<Shared>,
}

impl NodeEngine for PgNodes {
    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn acquire_node(&self, request: NodeRequest) -> NodeFuture {
        Box::pin(recipe::acquire(self.shared.clone(), request))
    }

    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>> {
        let conn = self.shared.pool.conn_of(generation)?;
        Some(conn)
    }

    fn release_node(&self, node: OwnedNode) {
        recipe::release(&self.shared, node);
    }

    fn remote_contender(&self, name: &LockName, node: &OwnedNode, mode: Mode) -> WatchFuture {
        Box::pin(recipe::remote_contender(
            self.shared.clone(),
            name.clone(),
            node.generation,
            mode,
        ))
    }
}
