//! One guest's lock session on the shared ZooKeeper session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use tokio::sync::{mpsc, oneshot};

use super::Shared;
use super::handoff::{LocalGrant, LocalHandoff, Message, local_token};
use super::liveness::Health;
use super::local_lock::LocalLock;
use super::recipe::{self, OwnedNode, Waiting, until};
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
    held: Mutex<HashMap<u64, Held>>,
    next_grant: AtomicU64,
}

/// One grant of a lock session.
enum Held {
    /// A node of its own in the lock's queue.
    Node(OwnedNode),
    /// A share of this host's node, handed over by the host-local lock task.
    Local {
        /// The request's id at that task.
        id: u64,
        generation: u64,
        task: mpsc::UnboundedSender<Message>,
    },
}

impl Held {
    fn generation(&self) -> u64 {
        match self {
            Held::Node(node) => node.generation,
            Held::Local { generation, .. } => *generation,
        }
    }

    fn release(self, shared: &Arc<Shared>) {
        match self {
            Held::Node(node) => {
                release::delete_node(shared, node.generation, node.prefix, node.path);
            }
            Held::Local { id, task, .. } => {
                // The task hands the lock on (or releases the node).
                let _ = task.send(Message::Release { id });
            }
        }
    }
}

/// Withdraws a request from the host-local lock task unless disarmed (the
/// acquire was cancelled, timed out or failed).
struct Withdraw<'a> {
    task: &'a mpsc::UnboundedSender<Message>,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.task.send(Message::Release { id: self.id });
        }
    }
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

    fn held(&self) -> MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, node: OwnedNode) -> Grant {
        // A node of its own is grant 0 under it (see `handoff` for the encoding).
        let token = local_token(node.token, 0);
        self.insert(Held::Node(node), token)
    }

    fn insert(&self, held: Held, token: u64) -> Grant {
        let id = self.next_grant.fetch_add(1, Ordering::Relaxed) + 1;
        self.held().insert(id, held);
        Grant {
            id: GrantId(id),
            token,
        }
    }

    /// Downgrades local grant `id` at its task: a new shared grant beside it.
    async fn downgrade_local(
        &self,
        id: u64,
        task: mpsc::UnboundedSender<Message>,
    ) -> Result<Grant, BackendError> {
        let new_id = self.shared.local_locks.next_id();
        let (reply, answer) = oneshot::channel();
        let ended = || BackendError::Unavailable("the host-local lock task ended".into());
        task.send(Message::Downgrade { id, new_id, reply })
            .map_err(|_| ended())?;
        // Dropped before the grant is recorded here: the task releases
        // `new_id` (or ignores it when the downgrade failed).
        let mut withdraw = Withdraw {
            task: &task,
            id: new_id,
            armed: true,
        };
        let LocalGrant { generation, token } = answer.await.map_err(|_| ended())??;
        withdraw.armed = false;
        let held = Held::Local {
            id: new_id,
            generation,
            task: task.clone(),
        };
        Ok(self.insert(held, token))
    }

    /// Acquires through this host's local lock task for `name` (hand-off on).
    async fn acquire_local(
        &self,
        limits: LocalHandoff,
        name: &LockName,
        mode: Mode,
        deadline: Option<tokio::time::Instant>,
        wait: bool,
    ) -> Result<Option<Grant>, BackendError> {
        let locks = &self.shared.local_locks;
        let id = locks.next_id();
        let (reply, answer) = oneshot::channel();
        let message = Message::Acquire {
            id,
            mode,
            wait,
            deadline,
            reply,
        };
        let task = locks.send(name, message, |number, receiver| {
            let lock = LocalLock::new(self.shared.clone(), name.clone(), number, limits, receiver);
            self.shared.spawn(lock.run());
        });
        let mut withdraw = Withdraw {
            task: &task,
            id,
            armed: true,
        };
        let answer = until(deadline, answer)
            .await?
            .map_err(|_| BackendError::Unavailable("the host-local lock task ended".into()))??;
        let Some(LocalGrant { generation, token }) = answer else {
            return Ok(None);
        };
        withdraw.armed = false;
        let held = Held::Local {
            id,
            generation,
            task: task.clone(),
        };
        Ok(Some(self.insert(held, token)))
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
        if let Some(limits) = self.shared.connection.config().local_handoff {
            return self
                .acquire_local(limits, name, mode, deadline, true)
                .await?
                .ok_or_else(|| BackendError::Unavailable("the host-local lock task ended".into()));
        }
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
        if let Some(limits) = self.shared.connection.config().local_handoff {
            return self.acquire_local(limits, name, mode, None, false).await;
        }
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
        let held = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        held.release(&self.shared);
        Ok(())
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        let Some(generation) = self.held().get(&grant.0).map(Held::generation) else {
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
        let local = match self.held().get(&exclusive.0) {
            Some(Held::Node(node)) => Err(node.clone()),
            Some(Held::Local { id, task, .. }) => Ok((*id, task.clone())),
            None => return Err(BackendError::UnknownGrant(exclusive.0)),
        };
        let node = match local {
            Ok((id, task)) => return self.downgrade_local(id, task).await,
            Err(node) => node,
        };
        let shared = downgrade::downgrade(&self.shared, &node, &self.data).await?;
        Ok(self.record(shared))
    }
}

impl Drop for ZkLockSession {
    fn drop(&mut self) {
        let held: Vec<Held> = self.held().drain().map(|(_, held)| held).collect();
        for held in held {
            held.release(&self.shared);
        }
    }
}
