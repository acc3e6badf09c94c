//! A guest's lock session: every lock goes through the host's hand-off task
//! for its name ([`handoff::ask`]), which holds the host's one node for it;
//! the session keeps what the task granted, and the grant's status is its
//! node's session's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;
use wardlock_backend::handoff::{self, LocalHeld, LocalLock};
use wardlock_backend::liveness;
use wardlock_backend::{
    BackendError, Grant, GrantId, GrantStatus, LockSession, Request, RequestKind, StatusChange,
    settled,
};

use crate::engine::{Shared, StoreNodes};

/// A grant: the task's answer, and a sender dropped with the grant (which
/// wakes its status subscribers with `released`).
struct Held {
    local: LocalHeld,
    alive: watch::Sender<()>,
}

/// A session of [`crate::NodeBackend`].
pub(crate) struct NodeLockSession {
    shared: Arc<Shared>,
    held: Mutex<HashMap<u64, Held>>,
    last_grant: AtomicU64,
}

impl NodeLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        NodeLockSession {
            shared,
            held: Mutex::new(HashMap::new()),
            last_grant: AtomicU64::new(0),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, local: LocalHeld) -> Grant {
        let token = local.token;
        let id = self.last_grant.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = watch::Sender::new(());
        self.held().insert(id, Held { local, alive });
        Grant {
            id: GrantId(id),
            token,
        }
    }

    /// Asks the lock's task for a grant (`wait: false`: answer `None` rather
    /// than wait), starting the task when none runs for the name.
    async fn take(
        &self,
        request: Request<'_>,
        deadline: Option<Instant>,
        wait: bool,
    ) -> Result<Option<Grant>, BackendError> {
        let RequestKind::Lock(mode) = request.kind else {
            return Err(BackendError::Unsupported(
                "the node engine has no semaphores".into(),
            ));
        };
        let shared = &self.shared;
        let start = |start| {
            let engine = Arc::new(StoreNodes {
                shared: shared.clone(),
            });
            let limits = shared.config.local_handoff;
            let lock = LocalLock::new(engine, request.name.clone(), start, limits);
            tokio::spawn(lock.run());
        };
        let held = handoff::ask(
            &shared.local_locks,
            request.name,
            mode,
            deadline,
            wait,
            start,
        )
        .await?;
        Ok(held.map(|local| self.record(local)))
    }
}

#[async_trait]
impl LockSession for NodeLockSession {
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
        match self.shared.session_of(generation) {
            Some(session) => liveness::grant_status(session.liveness.health(true, Instant::now())),
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
        let health = self.shared.session_of(generation).map(|session| {
            // Compute now, so what the subscriber starts from is current.
            let _ = session.liveness.health(true, Instant::now());
            session.liveness.watch_health()
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

impl Drop for NodeLockSession {
    fn drop(&mut self) {
        for (_, held) in self.held().drain() {
            held.local.release();
        }
    }
}
