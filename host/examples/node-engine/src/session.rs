//! A guest's lock session: every lock goes through the host's hand-off task
//! for its name ([`handoff::ask`]), which holds the host's one node for it;
//! the session keeps what the task granted in the toolkit's
//! [`SessionGrants`], and a grant's status is its node's session's (what
//! [`SessionLookup`] says of it).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;
use wardlock_backend::handoff::{self, LocalLock, SessionGrants, SessionHealth, SessionLookup};
use wardlock_backend::{
    BackendError, Grant, GrantId, GrantStatus, LockSession, Request, RequestKind, StatusChange,
};

use crate::engine::{Shared, StoreNodes};

/// The host's sessions with the store, as [`SessionGrants`] asks about them.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        let session = self.session_of(generation)?;
        Some(session.liveness.health(true, Instant::now()))
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        let session = self.session_of(generation)?;
        // Compute now, so what the subscriber starts from is current.
        let _ = session.liveness.health(true, Instant::now());
        Some(session.liveness.watch_health())
    }
}

/// A session of [`crate::NodeBackend`]: the grants its locks' tasks made.
pub(crate) struct NodeLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<()>,
}

impl NodeLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        NodeLockSession {
            shared,
            grants: SessionGrants::default(),
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
        Ok(held.map(|local| self.grants.record(local, ())))
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
        self.grants.release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.grants.status(grant, &*self.shared)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.grants.status_changed(grant, seen, &*self.shared)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        self.grants
            .downgrade(&self.shared.local_locks, exclusive, |()| ())
            .await
    }
}


impl Drop for NodeLockSession {
    fn drop(&mut self) {
        self.grants.release_all();
    }
}
