//! Host-local hand-off on ZooKeeper: the host's node of a hand-off task (the
//! lock recipe, the guaranteed delete, the remote-contender watch), and a
//! guest's request to the task (see `wardlock_backend::handoff`).

use std::sync::Arc;

use tokio::time::Instant;

use super::Shared;
use super::connection::ZkSession;
use super::recipe::{self, OwnedNode, Waiting};
use super::remote_contender::remote_contender;
use crate::recipe::release;
use wardlock_backend::handoff::{
    LocalHandoff, LocalHeld, LocalLock, LocalLocks, NodeEngine, NodeFuture, NodeRequest,
    NodeSession, WatchFuture, ask,
};
use wardlock_backend::liveness::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{Mode, Result};

/// Asks `name`'s task on `shared` (started if needed) for a grant in `mode`;
/// `wait: false` answers `None` rather than wait.
///
/// # Errors
/// `Timeout` past `deadline`; what the task's node acquisition reported.
///
/// # Cancellation safety
/// Cancel safe: a dropped request is withdrawn from the task (or its grant
/// released at once).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    limits: LocalHandoff,
    name: &LockName,
    mode: Mode,
    deadline: Option<Instant>,
    wait: bool,
) -> Result<Option<LocalHeld>> {
    let start = |start| {
        let engine = Arc::new(ZooKeeperNodes::new(shared.clone()));
        let lock = LocalLock::new(engine, name.clone(), start, limits);
        shared.spawn(lock.run());
    };
    ask(&shared.local_locks, name, mode, deadline, wait, start).await
}

/// One backend shard's ZooKeeper, as hand-off tasks use it.
pub(super) struct ZooKeeperNodes {
    shared: Arc<Shared>,
    /// The nodes' data: which host holds them.
    data: Arc<[u8]>,
}

impl ZooKeeperNodes {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let data = format!(
            "{} (host-local hand-off)",
            shared.connection.config().host_description
        );
        ZooKeeperNodes {
            shared,
            data: data.into_bytes().into(),
        }
    }
}

impl NodeEngine for ZooKeeperNodes {
    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn acquire_node(&self, request: NodeRequest) -> NodeFuture {
        let shared = self.shared.clone();
        let data = self.data.clone();
        Box::pin(async move {
            let waiting = if request.wait {
                Waiting::Wait
            } else {
                Waiting::DontWait
            };
            let (name, mode, deadline) = (&request.name, request.mode, request.deadline);
            recipe::acquire(&shared, name, mode, &data, deadline, waiting).await
        })
    }

    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>> {
        let session = self.shared.connection.session_of(generation)?;
        Some(session)
    }

    fn release_node(&self, node: OwnedNode) {
        release::delete_node(&self.shared, node.generation, node.prefix, node.path);
    }

    fn remote_contender(&self, name: &LockName, node: &OwnedNode, mode: Mode) -> WatchFuture {
        let Some(session) = self.shared.connection.session_of(node.generation) else {
            return Box::pin(std::future::pending());
        };
        let config = self.shared.connection.config();
        Box::pin(remote_contender(
            session,
            config.lock_path(name),
            node.path.clone(),
            mode,
            config.dialect,
        ))
    }
}

impl NodeSession for ZkSession {
    fn health(&self) -> SessionHealth {
        ZkSession::health(self)
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { ZkSession::until_over(&self).await })
    }
}
