//! A guest's lock session on etcd: every lock goes through the host's
//! hand-off task for its name (one key per host and lock, under the host's
//! lease; see `keys`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Shared;
use super::keys::EtcdKeys;
use crate::backend::handoff::{self, LocalHeld, LocalLock};
use crate::backend::liveness;
use crate::backend::{
    BackendError, Grant, GrantId, GrantStatus, LockSession, Request, RequestKind, StatusChange,
    settled,
};
use crate::name::LockName;

/// A grant and what ends it.
struct Held {
    local: LocalHeld,
    /// Dropped with the grant: wakes its status subscribers.
    alive: watch::Sender<()>,
}

/// A session of [`super::EtcdBackend`].
pub(super) struct EtcdLockSession {
    shared: Arc<Shared>,
    held: Mutex<HashMap<u64, Held>>,
    next_grant: AtomicU64,
}

impl EtcdLockSession {
    pub fn new(shared: Arc<Shared>) -> Self {
        EtcdLockSession {
            shared,
            held: Mutex::new(HashMap::new()),
            next_grant: AtomicU64::new(0),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, local: LocalHeld) -> Grant {
        let token = local.token;
        let id = self.next_grant.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = watch::Sender::new(());
        self.held().insert(id, Held { local, alive });
        Grant {
            id: GrantId(id),
            token,
        }
    }

    async fn take(
        &self,
        request: Request<'_>,
        deadline: Option<Instant>,
        wait: bool,
    ) -> Result<Option<Grant>, BackendError> {
        let mode = match request.kind {
            RequestKind::Lock(mode) => mode,
            RequestKind::Permit(_) => {
                return Err(BackendError::Unsupported(
                    "the etcd backend has no semaphores yet; use ZooKeeper or memory for permits"
                        .into(),
                ));
            }
        };
        let shared = &self.shared;
        let name: &LockName = request.name;
        let start = |number, receiver| {
            let engine = Arc::new(EtcdKeys {
                shared: shared.clone(),
            });
            let limits = shared.leases.config().local_handoff;
            let lock = LocalLock::new(engine, name.clone(), number, limits, receiver);
            shared.runtime.spawn(lock.run());
        };
        let held = handoff::ask(&shared.local_locks, name, mode, deadline, wait, start).await?;
        Ok(held.map(|local| self.record(local)))
    }
}

#[async_trait]
impl LockSession for EtcdLockSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.take(request, deadline, true).await?.ok_or_else(|| {
            BackendError::Unavailable("the hand-off task ended without a grant".into())
        })
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        self.take(request, None, false).await
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let held = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        held.local.release();
        Ok(())
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        let Some(generation) = self.held().get(&grant.0).map(|h| h.local.generation) else {
            return GrantStatus::Released;
        };
        match self.shared.leases.lease_of(generation) {
            Some(lease) => liveness::grant_status(lease.health()),
            None => GrantStatus::Lost,
        }
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        let watched = self
            .held()
            .get(&grant.0)
            .map(|h| (h.alive.subscribe(), h.local.generation));
        let Some((alive, generation)) = watched else {
            return settled(GrantStatus::Released, seen);
        };
        let health = self.shared.leases.lease_of(generation).map(|lease| {
            let _ = lease.health();
            lease.liveness.watch_health()
        });
        liveness::status_change(alive, health, seen)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let local = self
            .held()
            .get(&exclusive.0)
            .map(|h| h.local.clone())
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let shared = handoff::downgrade(&self.shared.local_locks, &local).await?;
        Ok(self.record(shared))
    }
}

impl Drop for EtcdLockSession {
    fn drop(&mut self) {
        for (_, held) in self.held().drain() {
            held.local.release();
        }
    }
}
