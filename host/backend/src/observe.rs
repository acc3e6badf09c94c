//! One wrapper for everything that watches a lock session without being one:
//! the hold lease (`--max-hold`), serve's metrics, the tests' taps.
//!
//! [`Observed`] forwards every [`LockSession`] method to the session it wraps
//! and tells a [`SessionObserver`] what happened (the trait's provided
//! `acquire`, `try_acquire`, `acquire_permit` and `try_acquire_permit` come
//! through `acquire_request` and `try_acquire_request`, so they are observed
//! too); [`ObservedBackend`] wraps a
//! backend so each session it opens is observed, and forwards every
//! [`LockBackend`] method (`health` and `shutdown` included). A new trait
//! method is forwarded here once, not in every wrapper.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{
    BackendError, Contenders, Grant, GrantId, GrantStatus, GuardedEntry, GuardedKey, Health,
    Leader, LeaderChange, LockBackend, LockSession, Request, Revoked, StatusChange,
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
    /// A request (`acquire_*` or `try_acquire_*`) arrives; the value returned
    /// is dropped when the request ends.
    fn requested(&self, request: Request<'_>) -> RequestGuard {
        let _ = request;
        None
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
    fn revocation_answered(&self, name: &LockName, answer: &Result<u32, BackendError>) {
        let _ = (name, answer);
    }
}

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
/// Dropping it drops `inner` (which releases everything) and then the
/// observer.
pub struct Observed<O> {
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
    ) -> Result<Grant, BackendError> {
        let guard = self.observer.requested(request);
        let started = Instant::now();
        let result = self.inner.acquire_request(request, timeout).await;
        drop(guard);
        match &result {
            Ok(grant) => self
                .observer
                .granted(request, grant, Some(started.elapsed())),
            Err(error) => self.observer.failed(request, error),
        }
        result
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        let guard = self.observer.requested(request);
        let result = self.inner.try_acquire_request(request).await;
        drop(guard);
        match &result {
            Ok(Some(grant)) => self.observer.granted(request, grant, None),
            Ok(None) => {}
            Err(error) => self.observer.failed(request, error),
        }
        result
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
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

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let shared = self.inner.downgrade(exclusive).await?;
        self.observer.downgraded(exclusive, &shared);
        Ok(shared)
    }

    async fn revocation_requested(&self, grant: GrantId) -> bool {
        self.inner.revocation_requested(grant).await
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        self.inner.revoked(grant)
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32, BackendError> {
        self.observer.revocation_asked(name);
        let answer = self.inner.request_revocation(name).await;
        self.observer.revocation_answered(name, &answer);
        answer
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

    /// Forwarded unobserved: a leadership is no lock request (a hold lease
    /// or a lock metric does not count it); its release and status go
    /// through the observer as every grant's.
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

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn health(&self) -> Health {
        self.inner.health()
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.inner.shutdown()
    }
}
