//! One guest's lock session on the shared ZooKeeper session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use super::Shared;
use super::liveness::Health;
use super::recipe::{self, OwnedNode, Waiting};
use super::{downgrade, release};
use crate::backend::{BackendError, Grant, GrantId, GrantStatus, LockSession, Mode};
use crate::name::LockName;

/// One guest's [`LockSession`] (a *lock session*: its grants and waits). Every
/// lock session of the host runs on the one current *ZooKeeper session*
/// ([`super::connection::ZkSession`]); ending a lock session deletes its nodes,
/// ending the ZooKeeper session loses every lock session's grants.
pub(super) struct ZkLockSession {
    shared: Arc<Shared>,
    /// Written into every node: who holds or waits (for status tools).
    data: Vec<u8>,
    held: Mutex<HashMap<u64, OwnedNode>>,
    next_grant: AtomicU64,
}

impl ZkLockSession {
    pub(super) fn new(shared: Arc<Shared>, data: String) -> Self {
        ZkLockSession {
            shared,
            data: data.into_bytes(),
            held: Mutex::new(HashMap::new()),
            next_grant: AtomicU64::new(0),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<u64, OwnedNode>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, node: OwnedNode) -> Grant {
        let id = self.next_grant.fetch_add(1, Ordering::Relaxed) + 1;
        let token = node.token;
        self.held().insert(id, node);
        Grant {
            id: GrantId(id),
            token,
        }
    }
}

#[async_trait]
impl LockSession for ZkLockSession {
    async fn acquire(
        &self,
        name: &LockName,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let node = recipe::acquire(
            &self.shared,
            name,
            mode,
            &self.data,
            deadline,
            Waiting::Wait,
        )
        .await?;
        node.map(|node| self.record(node))
            .ok_or_else(|| BackendError::Unavailable("lock recipe ended without a grant".into()))
    }

    async fn try_acquire(
        &self,
        name: &LockName,
        mode: Mode,
    ) -> Result<Option<Grant>, BackendError> {
        let node = recipe::acquire(
            &self.shared,
            name,
            mode,
            &self.data,
            None,
            Waiting::DontWait,
        )
        .await?;
        Ok(node.map(|node| self.record(node)))
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let node = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        release::delete_node(&self.shared, node.generation, node.prefix, node.path);
        Ok(())
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        let Some(generation) = self.held().get(&grant.0).map(|n| n.generation) else {
            return GrantStatus::Released;
        };
        match self.shared.connection.session_of(generation) {
            None => GrantStatus::Lost,
            Some(session) => match session.health() {
                Health::Live => GrantStatus::Held,
                Health::Suspended => GrantStatus::Suspended,
                Health::Ended => GrantStatus::Lost,
            },
        }
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let node = self
            .held()
            .get(&exclusive.0)
            .cloned()
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let shared = downgrade::downgrade(&self.shared, &node, &self.data).await?;
        Ok(self.record(shared))
    }
}

impl Drop for ZkLockSession {
    fn drop(&mut self) {
        for (_, node) in self.held().drain() {
            release::delete_node(&self.shared, node.generation, node.prefix, node.path);
        }
    }
}
