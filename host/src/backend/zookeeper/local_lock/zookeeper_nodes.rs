//! The host's node of a hand-off task on ZooKeeper: the lock recipe, the
//! guaranteed delete, the remote-contender watch (see `engine`).

use std::sync::Arc;

use tokio::time::Instant;

use super::super::Shared;
use super::super::connection::ZkSession;
use super::super::handoff::LocalLocks;
use super::super::liveness::Health;
use super::super::recipe::{self, OwnedNode, Waiting};
use super::super::release;
use super::engine::{NodeEngine, NodeFuture, NodeSession, WatchFuture};
use super::remote::remote_contender;
use crate::backend::Mode;
use crate::name::LockName;

/// One backend shard's ZooKeeper, as hand-off tasks use it.
pub(in super::super) struct ZooKeeperNodes {
    shared: Arc<Shared>,
    /// The nodes' data: which host holds them.
    data: Arc<[u8]>,
}

impl ZooKeeperNodes {
    pub fn new(shared: Arc<Shared>) -> Self {
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

    fn acquire_node(
        &self,
        name: &LockName,
        mode: Mode,
        deadline: Option<Instant>,
        wait: bool,
    ) -> NodeFuture {
        let shared = self.shared.clone();
        let name = name.clone();
        let data = self.data.clone();
        let waiting = if wait {
            Waiting::Wait
        } else {
            Waiting::DontWait
        };
        Box::pin(
            async move { recipe::acquire(&shared, &name, mode, &data, deadline, waiting).await },
        )
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
    fn health(&self) -> Health {
        ZkSession::health(self)
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { ZkSession::until_over(&self).await })
    }
}
