//! One wrapper for everything that watches a lock session without being one:
//! the hold lease (`--max-hold`), serve's metrics, the tests' taps.
//!
//! [`Observed`] forwards every [`LockSession`] method to the session it wraps
//! and tells a [`SessionObserver`] what happened (the trait's provided
//! `acquire` and `try_acquire`, and a semaphore's `acquire_permit` and
//! `try_acquire_permit`, come through `acquire_request` and
//! `try_acquire_request`, so they are observed too); [`ObservedBackend`]
//! wraps a backend so each session it opens is observed, and forwards every
//! [`LockBackend`] method (`health` and `shutdown` included).
//!
//! The rule: [`Observed`] is the only type that implements [`LockSession`]
//! by forwarding to another session. Whatever watches sessions (the hold
//! lease, metrics, the lock table and its deadlock breaker, the tests' taps
//! and hold log) is a [`SessionObserver`] plugged into it, so a new trait
//! method is forwarded here once, not in every wrapper; several observers
//! are several `Observed` layers. A type that changes what a session
//! answers rather than watching it (the tests' mutant that grants without
//! waiting) is an engine of its own, not a wrapper.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{
    BackendError, Contention, Election, Grant, GrantId, GrantStatus, GuardedStore, Health,
    KeyValue, LockBackend, LockSession, Request, Result, Revocation, Revoked, Semaphores,
    StatusChange, never_revoked,
};
use crate::name::LockName;

/// Something a request's observer keeps until the request ends, however it
/// ends (granted, refused, or its future dropped): a gauge to decrement, say.
pub type RequestGuard = Option<Box<dyn Any + Send>>;

/// What an observer of one session hears. Every method does nothing by
/// default (the status methods pass the session's answer through), so an
/// observer implements what it watches. Hooks run inline: keep them quick
/// and never block.
pub trait SessionObserver: Send + Sync + 'static {
    /// A request arrives (`waits`: an acquire, which may wait; otherwise a
    /// try). The observer admits it, with a guard kept until the request
    /// ends and, for a wait, a way to end it early; or refuses it, and the
    /// engine is never asked (the lock table refusing a wait that would
    /// close a deadlock cycle).
    ///
    /// # Errors
    /// The refusal, returned to the caller as the request's answer.
    fn admit(&self, request: Request<'_>, waits: bool) -> Result<Admission> {
        let _ = (request, waits);
        Ok(Admission::default())
    }

    /// `request` was granted after waiting `waited` (`None`: a try, which
    /// never waits).
    fn granted(&self, request: Request<'_>, grant: &Grant, waited: Option<Duration>) {
        let _ = (request, grant, waited);
    }

    /// `request` ended without a grant (a try that would wait is no failure).
    fn failed(&self, request: Request<'_>, error: &BackendError) {
        let _ = (request, error);
    }

    /// The exclusive grant `exclusive` was downgraded to the shared `shared`.
    fn downgraded(&self, exclusive: GrantId, shared: &Grant) {
        let _ = (exclusive, shared);
    }

    /// `grant` is being released (called before the session releases it).
    fn released(&self, grant: GrantId) {
        let _ = grant;
    }

    /// The session is being dropped, releasing every grant it still holds
    /// (called before it does).
    fn closing(&self) {}

    /// What to report for `grant`, whose session reports `status`.
    fn status(&self, grant: GrantId, status: GrantStatus) -> GrantStatus {
        let _ = grant;
        status
    }

    /// The future a `status_changed(grant, seen)` call returns, given the
    /// session's own.
    fn status_changed(&self, call: StatusCall) -> StatusChange {
        call.inner
    }

    /// A revocation of `name` is being asked for.
    fn revocation_asked(&self, name: &LockName) {
        let _ = name;
    }

    /// The session answered a revocation request of `name`.
    fn revocation_answered(&self, name: &LockName, answer: &Result<u32>) {
        let _ = (name, answer);
    }
}

/// An observer's yes to a request ([`SessionObserver::admit`]).
#[derive(Default)]
pub struct Admission {
    /// Kept until the request ends, however it ends.
    pub guard: RequestGuard,
    /// Ends a wait early with its error (the lock table breaking a deadlock
    /// cycle): raced against the engine's answer, which wins when both are
    /// ready. Ignored for a try.
    pub abort: Option<AbortWait>,
}

impl Admission {
    /// Admitted, keeping `guard` until the request ends.
    pub fn guard(guard: impl Any + Send) -> Self {
        Admission {
            guard: Some(Box::new(guard)),
            abort: None,
        }
    }
}

/// A future that ends a wait early with the error it resolves to.
pub type AbortWait = std::pin::Pin<Box<dyn Future<Output = BackendError> + Send>>;

/// A `status_changed` call as an observer sees it.
pub struct StatusCall {
    /// The grant asked about.
    pub grant: GrantId,
    /// The status the caller has seen.
    pub seen: GrantStatus,
    /// The wrapped session's future for it.
    pub inner: StatusChange,
}

/// A session whose every call is forwarded to `inner` and told to `observer`.
/// Dropping it tells the observer it is closing, then drops `inner` (which
/// releases everything) and then the observer.
pub struct Observed<O: SessionObserver> {
    inner: Box<dyn LockSession>,
    observer: O,
}

impl<O: SessionObserver> Observed<O> {
    /// `inner`, observed by `observer`.
    pub fn new(inner: Box<dyn LockSession>, observer: O) -> Self {
        Observed { inner, observer }
    }
}

#[async_trait]
impl<O: SessionObserver> LockSession for Observed<O> {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        let Admission { guard, abort } = self.observer.admit(request, true)?;
        let started = Instant::now();
        let waited = self.inner.acquire_request(request, timeout);
        // A grant that is ready wins over an abort that is too: dropping the
        // engine's future withdraws the wait (every engine's acquire is
        // cancel safe).
        let result = match abort {
            None => waited.await,
            Some(abort) => tokio::select! {
                biased;
                result = waited => result,
                error = abort => Err(error),
            },
        };
        drop(guard);
        match &result {
            Ok(grant) => self
                .observer
                .granted(request, grant, Some(started.elapsed())),
            Err(error) => self.observer.failed(request, error),
        }
        result
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        let Admission { guard, .. } = self.observer.admit(request, false)?;
        let result = self.inner.try_acquire_request(request).await;
        drop(guard);
        match &result {
            Ok(Some(grant)) => self.observer.granted(request, grant, None),
            Ok(None) => {}
            Err(error) => self.observer.failed(request, error),
        }
        result
    }

    fn release(&self, grant: GrantId) -> Result<()> {
        self.observer.released(grant);
        self.inner.release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.observer.status(grant, self.inner.status(grant))
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        let inner = self.inner.status_changed(grant, seen);
        self.observer
            .status_changed(StatusCall { grant, seen, inner })
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant> {
        let shared = self.inner.downgrade(exclusive).await?;
        self.observer.downgraded(exclusive, &shared);
        Ok(shared)
    }

    /// This wrapper, when the engine has semaphores: permits are asked for
    /// through `acquire_request` above, so they are observed as locks are.
    fn semaphores(&self) -> Result<&dyn Semaphores> {
        self.inner.semaphores()?;
        Ok(self)
    }

    /// This wrapper, when the engine has revocation: a request to revoke is
    /// observed.
    fn revocation(&self) -> Result<&dyn Revocation> {
        self.inner.revocation()?;
        Ok(self)
    }

    /// The engine's own: a listing is no request an observer counts.
    fn contention(&self) -> Result<&dyn Contention> {
        self.inner.contention()
    }

    /// The engine's own: a guarded write needs a grant, which was observed.
    fn guarded_store(&self) -> Result<&dyn GuardedStore> {
        self.inner.guarded_store()
    }

    /// The engine's own: a fenced write needs grants, which were observed.
    fn key_value(&self) -> Result<&dyn KeyValue> {
        self.inner.key_value()
    }

    /// The engine's own: a leadership is no lock request (a hold lease or a
    /// lock metric does not count it); its release and status go through
    /// the observer as every grant's.
    fn election(&self) -> Result<&dyn Election> {
        self.inner.election()
    }
}

impl<O: SessionObserver> Drop for Observed<O> {
    fn drop(&mut self) {
        self.observer.closing();
    }
}

impl<O: SessionObserver> Semaphores for Observed<O> {}

#[async_trait]
impl<O: SessionObserver> Revocation for Observed<O> {
    async fn revocation_requested(&self, grant: GrantId) -> bool {
        match self.inner.revocation() {
            Ok(inner) => inner.revocation_requested(grant).await,
            Err(_) => false,
        }
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        match self.inner.revocation() {
            Ok(inner) => inner.revoked(grant),
            Err(_) => never_revoked(),
        }
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32> {
        self.observer.revocation_asked(name);
        let answer = match self.inner.revocation() {
            Ok(inner) => inner.request_revocation(name).await,
            Err(error) => Err(error),
        };
        self.observer.revocation_answered(name, &answer);
        answer
    }
}

/// Makes the observer of each session a backend opens.
pub trait BackendObserver: Send + Sync + 'static {
    /// The observer of one session.
    type Session: SessionObserver;

    /// The observer of the session opened for `owner`.
    fn session(&self, owner: &str) -> Self::Session;
}

/// A backend whose sessions are [`Observed`]; every other call is forwarded.
pub struct ObservedBackend<B> {
    inner: Arc<dyn LockBackend>,
    observer: B,
}

impl<B: BackendObserver> ObservedBackend<B> {
    /// `inner`, each of its sessions observed by what `observer` makes.
    pub fn new(inner: Arc<dyn LockBackend>, observer: B) -> Self {
        ObservedBackend { inner, observer }
    }
}

impl<B: BackendObserver> LockBackend for ObservedBackend<B> {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        Box::new(Observed::new(
            self.inner.open_session(owner),
            self.observer.session(owner),
        ))
    }

    fn location(&self, name: &LockName) -> Option<String> {
        self.inner.location(name)
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn health(&self) -> Health {
        self.inner.health()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.shutdown()
    }
}
