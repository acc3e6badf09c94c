//! A guest's lock session on PostgreSQL: every lock goes through the host's
//! hand-off task for its name (one advisory lock per host and name; see
//! `recipe`); the session keeps what the task granted (the toolkit's
//! [`SessionGrants`]), and a grant's status is its lock's connection's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use wardlock_backend::guarded::{check_value, not_exclusive};
use wardlock_backend::handoff::{self, LocalLock, SessionGrants, SessionHealth, SessionLookup};
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Contenders, Contention, Grant, GrantId, GrantStatus, GuardedEntry, GuardedKey,
    GuardedStore, LockSession, Mode, Request, RequestKind, StatusChange,
};

use crate::guarded::{self, Holder};
use crate::handoff_nodes::PgNodes;
use crate::{Shared, inspect};

/// The connections a grant may live on, as [`SessionGrants`] asks.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        self.pool.conn_of(generation).map(|conn| conn.health())
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        self.pool.conn_of(generation).map(|conn| {
            let _ = conn.health();
            conn.liveness.watch_health()
        })
    }
}

/// A session of [`crate::PostgresBackend`]: its grants, each with its lock's
/// name and mode.
pub(crate) struct PgLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<(LockName, Mode)>,
}

impl PgLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        PgLockSession {
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
                "the Postgres engine has no semaphores (advisory locks have no permits)".into(),
            ));
        };
        let shared = &self.shared;
        let start = |start| {
            let engine = Arc::new(PgNodes {
                shared: shared.clone(),
            });
            let limits = shared.config.local_handoff;
            let lock = LocalLock::new(engine, request.name.clone(), start, limits);
            shared.runtime.spawn(lock.run());
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
        Ok(held.map(|local| self.grants.record(local, (request.name.clone(), mode))))
    }

    /// The exclusive grant `grant`, as a guarded write sees it.
    fn holder(&self, grant: GrantId) -> Result<Holder, BackendError> {
        let (local, (name, mode)) = self
            .grants
            .get(grant)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        if mode != Mode::Exclusive {
            return Err(not_exclusive(&format!("a shared holder of \"{name}\"")));
        }
        Ok(Holder {
            name,
            token: local.token,
            generation: local.generation,
        })
    }
}

#[async_trait]
impl LockSession for PgLockSession {
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
            .downgrade(&self.shared.local_locks, exclusive, |(name, _)| {
                (name, Mode::Shared)
            })
            .await
    }

    wardlock_backend::offers!(contention, guarded_store);
}

#[async_trait]
impl Contention for PgLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders, BackendError> {
        let all = inspect::contenders(&self.shared, name).await?;
        Ok(Contenders::head(all.into_iter(), limit))
    }
}

#[async_trait]
impl GuardedStore for PgLockSession {
    async fn guarded_get(
        &self,
        name: &LockName,
        key: &GuardedKey,
    ) -> Result<Option<GuardedEntry>, BackendError> {
        guarded::get(&self.shared, name, key).await
    }

    async fn guarded_put(
        &self,
        holder: GrantId,
        key: &GuardedKey,
        value: &[u8],
    ) -> Result<u64, BackendError> {
        let holder = self.holder(holder)?;
        check_value(value)?;
        guarded::put(&self.shared, &holder, key, value).await
    }

    async fn guarded_delete(
        &self,
        holder: GrantId,
        key: &GuardedKey,
    ) -> Result<bool, BackendError> {
        let holder = self.holder(holder)?;
        guarded::delete(&self.shared, &holder, key).await
    }

    async fn guarded_keys(
        &self,
        name: &LockName,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, BackendError> {
        guarded::keys(&self.shared, name, prefix, limit).await
    }
}

impl Drop for PgLockSession {
    fn drop(&mut self) {
        self.grants.release_all();
    }
}
