//! A guest's lock session on PostgreSQL: every lock goes through the host's
//! hand-off task for its name (one advisory lock per host and name; see
//! `recipe`); the session keeps what the task granted, and a grant's status
//! is its lock's connection's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use wardlock_backend::guarded::{check_value, not_exclusive};
use wardlock_backend::handoff::{self, LocalHeld, LocalLock};
use wardlock_backend::liveness;
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Contenders, Grant, GrantId, GrantStatus, GuardedEntry, GuardedKey, LockSession,
    Mode, Request, RequestKind, StatusChange, settled,
};

use crate::guarded::{self, Holder};
use crate::handoff_nodes::PgNodes;
use crate::{Shared, inspect};

/// A grant: the task's answer, its lock and mode, and a sender dropped with
/// the grant (which wakes its status subscribers with `released`).
struct Held {
    local: LocalHeld,
    name: LockName,
    mode: Mode,
    alive: watch::Sender<()>,
}

/// A session of [`crate::PostgresBackend`].
pub(crate) struct PgLockSession {
    shared: Arc<Shared>,
    held: Mutex<HashMap<u64, Held>>,
    last_grant: AtomicU64,
}

impl PgLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        PgLockSession {
            shared,
            held: Mutex::new(HashMap::new()),
            last_grant: AtomicU64::new(0),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, local: LocalHeld, name: LockName, mode: Mode) -> Grant {
        let token = local.token;
        let id = self.last_grant.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = watch::Sender::new(());
        self.held().insert(
            id,
            Held {
                local,
                name,
                mode,
                alive,
            },
        );
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
        Ok(held.map(|local| self.record(local, request.name.clone(), mode)))
    }

    /// The exclusive grant `grant`, as a guarded write sees it.
    fn holder(&self, grant: GrantId) -> Result<Holder, BackendError> {
        let held = self.held();
        let held = held
            .get(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        if held.mode != Mode::Exclusive {
            return Err(not_exclusive(&format!(
                "a shared holder of \"{}\"",
                held.name
            )));
        }
        Ok(Holder {
            name: held.name.clone(),
            token: held.local.token,
            generation: held.local.generation,
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
        match self.shared.pool.conn_of(generation) {
            Some(conn) => liveness::grant_status(conn.health()),
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
        let health = self.shared.pool.conn_of(generation).map(|conn| {
            // Compute now, so what the subscriber starts from is current.
            let _ = conn.health();
            conn.liveness.watch_health()
        });
        liveness::status_change(alive, health, seen)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let (local, name) = self
            .held()
            .get(&exclusive.0)
            .map(|h| (h.local.clone(), h.name.clone()))
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let shared = handoff::downgrade(&self.shared.local_locks, &local).await?;
        Ok(self.record(shared, name, Mode::Shared))
    }

    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders, BackendError> {
        let all = inspect::contenders(&self.shared, name).await?;
        Ok(Contenders::head(all.into_iter(), limit))
    }

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
        for (_, held) in self.held().drain() {
            held.local.release();
        }
    }
}
