//! A session tracked by the lock table: every call is forwarded to the
//! engine's session; waits and grants are recorded on the way, and a wait
//! chosen to break a cycle is ended.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use super::LockTable;
use super::state::{Broken, EngineId, SessionId, WaitId};
use crate::backend::{
    BackendError, Contenders, Grant, GrantId, GrantStatus, GuardedEntry, GuardedKey, Leader,
    LeaderChange, LockSession, Mode, Request, RequestKind, Revoked, StatusChange,
};
use crate::name::LockName;

pub(super) struct TrackedSession {
    inner: Box<dyn LockSession>,
    table: LockTable,
    engine: EngineId,
    session: SessionId,
}

impl TrackedSession {
    pub(super) fn new(
        table: LockTable,
        engine: EngineId,
        owner: &str,
        inner: Box<dyn LockSession>,
    ) -> Self {
        let session = table.shared.with(|state| state.open(owner));
        TrackedSession {
            inner,
            table,
            engine,
            session,
        }
    }

    /// Records a grant and ends the wait a cycle it closes picks, if any.
    fn granted(&self, name: String, kind: RequestKind, grant: &Grant) {
        let broken = self.table.shared.with(|state| {
            state.add_hold(
                self.session,
                (name, self.engine),
                kind,
                grant.id,
                grant.token,
            );
            state.break_cycle_through(self.session)
        });
        end(broken);
    }
}

/// Ends the wait chosen to break a cycle (its acquire returns
/// `would-deadlock`).
fn end(broken: Option<Broken>) {
    if let Some(broken) = broken {
        broken.breaker.notify_one();
    }
}

/// Forgets a wait however its acquire ends: granted, failed, or dropped.
struct WaitGuard<'a> {
    table: &'a LockTable,
    wait: WaitId,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.table.shared.with(|state| state.remove_wait(self.wait));
    }
}

impl Drop for TrackedSession {
    fn drop(&mut self) {
        self.table.shared.with(|state| state.close(self.session));
    }
}

#[async_trait]
impl LockSession for TrackedSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let breaker = Arc::new(Notify::new());
        let key = (request.name.to_string(), self.engine);
        let (wait, broken, scan) = self.table.shared.with(|state| {
            let wait = state.add_wait(self.session, key, request.kind, breaker.clone());
            (
                wait,
                state.break_cycle_through(self.session),
                state.start_scan(),
            )
        });
        if scan {
            super::remote::spawn(&self.table);
        }
        if let Some(broken) = broken {
            if broken.victim == wait {
                // Refused before it reaches the engine: nothing was queued.
                return Err(BackendError::WouldDeadlock(broken.name));
            }
            end(Some(broken));
        }
        let guard = WaitGuard {
            table: &self.table,
            wait,
        };
        // The engine's wait raced against this wait's breaker: a grant that
        // is ready wins; a broken wait drops the engine's future, which
        // withdraws it (cancel safe, as every engine's acquire is).
        let result = tokio::select! {
            biased;
            result = self.inner.acquire_request(request, timeout) => result,
            () = breaker.notified() => Err(BackendError::WouldDeadlock(request.name.to_string())),
        };
        drop(guard);
        if let Ok(grant) = &result {
            self.granted(request.name.to_string(), request.kind, grant);
        }
        result
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        let result = self.inner.try_acquire_request(request).await;
        if let Ok(Some(grant)) = &result {
            self.granted(request.name.to_string(), request.kind, grant);
        }
        result
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        self.table
            .shared
            .with(|state| state.remove_hold(self.session, grant));
        self.inner.release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.inner.status(grant)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.inner.status_changed(grant, seen)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let shared = self.inner.downgrade(exclusive).await?;
        let key = self
            .table
            .shared
            .with(|state| state.hold_key(self.session, exclusive));
        if let Some((name, _)) = key {
            self.granted(name, RequestKind::Lock(Mode::Shared), &shared);
        }
        Ok(shared)
    }

    async fn revocation_requested(&self, grant: GrantId) -> bool {
        self.inner.revocation_requested(grant).await
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        self.inner.revoked(grant)
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32, BackendError> {
        self.inner.request_revocation(name).await
    }

    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders, BackendError> {
        self.inner.contenders(name, limit).await
    }

    async fn guarded_get(
        &self,
        name: &LockName,
        key: &GuardedKey,
    ) -> Result<Option<GuardedEntry>, BackendError> {
        self.inner.guarded_get(name, key).await
    }

    async fn guarded_put(
        &self,
        holder: GrantId,
        key: &GuardedKey,
        value: &[u8],
    ) -> Result<u64, BackendError> {
        self.inner.guarded_put(holder, key, value).await
    }

    async fn guarded_delete(
        &self,
        holder: GrantId,
        key: &GuardedKey,
    ) -> Result<bool, BackendError> {
        self.inner.guarded_delete(holder, key).await
    }

    async fn guarded_keys(
        &self,
        name: &LockName,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, BackendError> {
        self.inner.guarded_keys(name, prefix, limit).await
    }

    /// Forwarded untracked: a leadership is no lock a guest waits for in a
    /// wait-for cycle (a campaign ends with the leader's term, not a
    /// release this table could see).
    async fn campaign(
        &self,
        name: &LockName,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        self.inner.campaign(name, value, timeout).await
    }

    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<(), BackendError> {
        self.inner.proclaim(leadership, value).await
    }

    async fn leader(&self, name: &LockName) -> Result<Option<Leader>, BackendError> {
        self.inner.leader(name).await
    }

    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        self.inner.leader_changed(name, seen)
    }
}
