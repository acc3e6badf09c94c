//! The core of a lock session written once for every engine whose locks all
//! go through the host's hand-off tasks: an engine implements
//! [`HandoffSession`] (where its tasks, grants and node sessions are, how a
//! lock's task starts) and gets [`LockSession`] with it, so the acquire,
//! release, status and downgrade of its sessions are this file's, not a copy
//! of another engine's.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{
    LocalHandoff, LocalLock, LocalLocks, NodeEngine, OwnedNode, SessionGrants, SessionLookup, ask,
    deadline_after,
};
use crate::contenders::Contention;
use crate::election::Election;
use crate::guarded::GuardedStore;
use crate::keyvalue::KeyValue;
use crate::revocation::Revocation;
use crate::semaphore::Semaphores;
use crate::session::absent;
use crate::{
    BackendError, Grant, GrantId, GrantStatus, LockSession, Mode, Request, Result, StatusChange,
};

/// An acquisition served on a node of the grant's own
/// ([`HandoffSession::acquire_own`]): the node and what to keep beside its
/// grant, or `None` when a try found nothing free.
pub type OwnAcquire<T> =
    Pin<Box<dyn Future<Output = Result<Option<(OwnedNode, T)>>> + Send + 'static>>;

/// A session whose every grant comes from its host's lock task for the name
/// ([`ask`]) and is kept in a [`SessionGrants`]. Implementing it implements
/// [`LockSession`]: an acquire or try asks the task (starting it on
/// [`HandoffSession::node_engine`] when none runs), and release, status,
/// status changes and downgrade are the grants'. Capabilities beyond the
/// core are offered here, as on [`LockSession`] (`wardlock_backend::offers!`
/// inside the `impl HandoffSession` block).
#[async_trait]
pub trait HandoffSession: Send + Sync + 'static {
    /// What the session keeps beside each grant (its lock's name and mode, …).
    type Extra: Clone + Send + Sync + 'static;

    /// The host's lock tasks, one per name (one per backend).
    fn local_locks(&self) -> &LocalLocks;

    /// This session's grants.
    fn grants(&self) -> &SessionGrants<Self::Extra>;

    /// How the node sessions a grant lives in are doing.
    fn lookup(&self) -> &dyn SessionLookup;

    /// The engine a new lock task queues the host's node on.
    fn node_engine(&self) -> Arc<dyn NodeEngine>;

    /// How far a lock task hands its lock among the host's guests.
    fn limits(&self) -> LocalHandoff;

    /// Runs a new lock task (on the engine's runtime; by default the
    /// caller's).
    fn spawn(&self, lock: LocalLock) {
        tokio::spawn(lock.run());
    }

    /// The mode `request` asks for and what to keep beside its grant; or why
    /// this engine cannot serve it (a permit, on an engine without
    /// semaphores).
    ///
    /// # Errors
    /// The refusal, returned as the request's answer.
    fn admit(&self, request: Request<'_>) -> Result<(Mode, Self::Extra)>;

    /// What to keep beside a shared grant downgraded from one kept with
    /// `extra`.
    fn downgraded(&self, extra: Self::Extra) -> Self::Extra;

    /// A request this engine serves on a node of the grant's own rather
    /// than through the lock's task (Valkey/Redis: a permit, a queue member
    /// of its own), waiting until `deadline` when `wait`, else trying once;
    /// `None` (the default) sends the request to the task. The grant is
    /// kept with [`SessionGrants::record_own`]: given up through
    /// [`HandoffSession::node_engine`], its status its node's session's.
    /// The future must be cancel safe: dropped, it leaves no node.
    fn acquire_own(
        &self,
        request: Request<'_>,
        deadline: Option<Instant>,
        wait: bool,
    ) -> Option<OwnAcquire<Self::Extra>> {
        let _ = (request, deadline, wait);
        None
    }

    /// As [`LockSession::semaphores`].
    fn semaphores(&self) -> Result<&dyn Semaphores> {
        Err(absent::semaphores())
    }

    /// As [`LockSession::revocation`].
    fn revocation(&self) -> Result<&dyn Revocation> {
        Err(absent::revocation())
    }

    /// As [`LockSession::contention`].
    fn contention(&self) -> Result<&dyn Contention> {
        Err(absent::contention())
    }

    /// As [`LockSession::guarded_store`].
    fn guarded_store(&self) -> Result<&dyn GuardedStore> {
        Err(absent::guarded_store())
    }

    /// As [`LockSession::key_value`].
    fn key_value(&self) -> Result<&dyn KeyValue> {
        Err(absent::key_value())
    }

    /// As [`LockSession::election`].
    fn election(&self) -> Result<&dyn Election> {
        Err(absent::election())
    }
}

/// Asks `request`'s lock task for a grant (`wait: false`: `None` rather than
/// wait), starting the task when none runs, and keeps what it grants.
async fn take<S: HandoffSession>(
    session: &S,
    request: Request<'_>,
    deadline: Option<Instant>,
    wait: bool,
) -> Result<Option<Grant>> {
    if let Some(own) = session.acquire_own(request, deadline, wait) {
        let taken = own.await?;
        return Ok(taken.map(|(node, extra)| {
            session
                .grants()
                .record_own(node, session.node_engine(), extra)
        }));
    }
    let (mode, extra) = session.admit(request)?;
    let start = |start| {
        let lock = LocalLock::new(
            session.node_engine(),
            request.name.clone(),
            start,
            session.limits(),
        );
        session.spawn(lock);
    };
    let held = ask(
        session.local_locks(),
        request.name,
        mode,
        deadline,
        wait,
        start,
    )
    .await?;
    Ok(held.map(|local| session.grants().record(local, extra)))
}

#[async_trait]
impl<S: HandoffSession> LockSession for S {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        take(self, request, deadline_after(timeout), true)
            .await?
            .ok_or_else(|| {
                BackendError::Unavailable("the hand-off task ended without a grant".into())
            })
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        take(self, request, None, false).await
    }

    fn release(&self, grant: GrantId) -> Result<()> {
        self.grants().release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.grants().status(grant, self.lookup())
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.grants().status_changed(grant, seen, self.lookup())
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant> {
        self.grants()
            .downgrade(self.local_locks(), exclusive, |extra| {
                self.downgraded(extra)
            })
            .await
    }

    fn semaphores(&self) -> Result<&dyn Semaphores> {
        HandoffSession::semaphores(self)
    }

    fn revocation(&self) -> Result<&dyn Revocation> {
        HandoffSession::revocation(self)
    }

    fn contention(&self) -> Result<&dyn Contention> {
        HandoffSession::contention(self)
    }

    fn guarded_store(&self) -> Result<&dyn GuardedStore> {
        HandoffSession::guarded_store(self)
    }

    fn key_value(&self) -> Result<&dyn KeyValue> {
        HandoffSession::key_value(self)
    }

    fn election(&self) -> Result<&dyn Election> {
        HandoffSession::election(self)
    }
}
