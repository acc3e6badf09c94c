//! Lock calls split in three for WIT 0.3.0, whose concurrent host functions
//! cannot hold the instance's state while they wait: a synchronous start on
//! the state (checks, and what the backend call needs), the backend call
//! away from it, and a synchronous finish that records the answer. Between
//! the backend's answer and the finish there is no await, so a call
//! cancelled by its guest is cancelled inside the backend call, whose own
//! cancel safety applies.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use super::{Join, LockError, LockHandle, Mode, WardlockCtx};
use crate::backend::{BackendError, Contenders, Grant, GrantId, LockSession, Request};
use crate::capability::pending::WaitSlot;
use crate::capability::permit::PermitHandle;
use crate::capability::wait_bounds::WaitBounds;
use crate::name::LockName;

/// A wait in a lock's queue to make ([`WardlockCtx::begin_acquire`]). 0.3.0's
/// `acquire` awaits it in the call's own future, so cancelling the call
/// drops the backend's wait at once; 0.2.0's `acquire-async` runs it in a
/// task of its own.
pub(crate) struct AcquireCall {
    pub(crate) name: LockName,
    pub(crate) mode: Mode,
    timeout: Option<Duration>,
    session: Arc<dyn LockSession>,
    waits: WaitBounds,
}

impl AcquireCall {
    /// Waits in the queue until granted, for at most the call's timeout (and
    /// the embedder's bounds).
    ///
    /// # Errors
    /// `Timeout`; the backend's failures.
    ///
    /// # Cancellation safety
    /// Cancel safe: the backend withdraws the wait (and releases a grant
    /// that arrived as it was dropped).
    pub(crate) async fn run(&self) -> Result<Grant, BackendError> {
        let request = Request::lock(&self.name, self.mode);
        traced_wait(&self.session, &self.waits, self.timeout, request).await
    }

    /// The session the wait is made on.
    pub(crate) fn session(&self) -> &Arc<dyn LockSession> {
        &self.session
    }
}

/// Waits for `request` on `session`, for at most `timeout` (and the
/// embedder's bounds), in one debug span per lock operation: how long the
/// guest waited and what it got (`WARDLOCK_LOG=debug`). Every wait of the
/// context goes through it ([`WardlockCtx::acquire_traced`] too).
///
/// # Cancellation safety
/// Cancel safe, as the backend's acquire.
pub(super) async fn traced_wait(
    session: &Arc<dyn LockSession>,
    waits: &WaitBounds,
    timeout: Option<Duration>,
    request: Request<'_>,
) -> Result<Grant, BackendError> {
    let span = tracing::debug_span!("acquire", lock = %request.name, mode = request.kind.as_str());
    let grant = waits
        .bound(timeout, |timeout| session.acquire_request(request, timeout))
        .instrument(span.clone())
        .await;
    span.in_scope(|| match &grant {
        Ok(grant) => tracing::debug!(token = grant.token, "granted"),
        Err(error) => tracing::debug!(%error, "not granted"),
    });
    grant
}

/// A wait for one permit of a semaphore to make
/// ([`WardlockCtx::begin_permit`]).
pub(crate) struct PermitCall {
    name: LockName,
    permits: u32,
    timeout: Option<Duration>,
    session: Arc<dyn LockSession>,
    waits: WaitBounds,
}

impl PermitCall {
    /// Waits in the semaphore's queue until a permit is granted.
    ///
    /// # Errors
    /// `Timeout`; the backend's failures and refusals.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`AcquireCall::run`].
    pub(crate) async fn run(&self) -> Result<Grant, BackendError> {
        let request = Request::permit(&self.name, self.permits);
        traced_wait(&self.session, &self.waits, self.timeout, request).await
    }
}

/// A `try-acquire-permit` to ask the backend for.
pub(crate) struct TryPermitCall {
    name: LockName,
    permits: u32,
    session: Arc<dyn LockSession>,
}

impl TryPermitCall {
    /// Asks the backend for a permit, if one is free.
    ///
    /// # Errors
    /// The backend's failures and refusals.
    ///
    /// # Cancellation safety
    /// As the backend's `try_acquire_request`.
    pub(crate) async fn run(&self) -> Result<Option<Grant>, BackendError> {
        let request = Request::permit(&self.name, self.permits);
        self.session.try_acquire_request(request).await
    }
}

/// A revocation request to make ([`WardlockCtx::revocation_call`]).
pub(crate) struct RevocationCall {
    name: LockName,
    session: Arc<dyn LockSession>,
}

impl RevocationCall {
    /// Asks the holders of the name to give it up; how many were asked.
    ///
    /// # Errors
    /// `Unavailable` when the lock service failed or has no revocation.
    ///
    /// # Cancellation safety
    /// Cancel safe: each holder asked is asked for good; nothing to undo.
    pub(crate) async fn run(&self) -> Result<u32, LockError> {
        Ok(self
            .session
            .revocation()?
            .request_revocation(&self.name)
            .await?)
    }
}

/// A downgrade to ask the backend for ([`WardlockCtx::downgrade_call`]).
pub(crate) struct DowngradeCall {
    name: LockName,
    /// The instance's record of the exclusive grant.
    exclusive: u64,
    grant: GrantId,
    session: Arc<dyn LockSession>,
}

impl DowngradeCall {
    /// Asks the backend for a shared grant beside the exclusive one.
    ///
    /// # Errors
    /// The backend's; `Unsupported` when it cannot downgrade (then
    /// [`WardlockCtx::finish_downgrade`] serves the request from the
    /// exclusive grant).
    ///
    /// # Cancellation safety
    /// As the backend's `downgrade`: dropped before it answered, nothing is
    /// granted.
    pub(crate) async fn run(&self) -> Result<Grant, BackendError> {
        self.session.downgrade(self.grant).await
    }
}

/// How a `try-acquire` stands after its start ([`WardlockCtx::begin_try_acquire`]).
pub(crate) enum TryBegun {
    /// Served from what the instance holds.
    Joined(LockHandle),
    /// A downgrade to ask for.
    Downgrade(DowngradeCall),
    /// A backend `try_acquire` to make.
    Ask(TryCall),
}

/// A `try_acquire` to ask the backend for.
pub(crate) struct TryCall {
    name: LockName,
    mode: Mode,
    session: Arc<dyn LockSession>,
}

impl TryCall {
    /// Asks the backend for the lock, if it is free.
    ///
    /// # Errors
    /// The backend's.
    ///
    /// # Cancellation safety
    /// As the backend's `try_acquire`.
    pub(crate) async fn run(&self) -> Result<Option<Grant>, BackendError> {
        self.session.try_acquire(&self.name, self.mode).await
    }
}

/// A `contenders` listing to ask the backend for.
pub(crate) struct ContendersCall {
    name: LockName,
    session: Arc<dyn LockSession>,
}

impl ContendersCall {
    /// Lists at most `limit` contenders of the name.
    ///
    /// # Errors
    /// `Unavailable` when the lock service failed or cannot list contenders.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub(crate) async fn run(&self, limit: u32) -> Result<Contenders, LockError> {
        Ok(self
            .session
            .contention()?
            .contenders(&self.name, limit)
            .await?)
    }
}

impl WardlockCtx {
    /// The wait for `name` in `mode` to make, with the slot it takes under
    /// the handle cap until its handle is recorded.
    pub(crate) fn acquire_call(
        &self,
        name: LockName,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> (AcquireCall, WaitSlot) {
        let call = AcquireCall {
            name,
            mode,
            timeout,
            session: self.session.clone(),
            waits: self.waits.clone(),
        };
        (call, WaitSlot::take(&self.waiting))
    }

    /// Records the grant `call` waited for; the slot goes, the handle counts.
    ///
    /// # Errors
    /// What the wait failed with.
    pub(crate) fn finish_acquire(
        &mut self,
        call: AcquireCall,
        slot: WaitSlot,
        answer: Result<Grant, BackendError>,
    ) -> Result<LockHandle, LockError> {
        drop(slot);
        Ok(self.record(call.name, call.mode, answer?))
    }

    /// The wait for one of `permits` permits of semaphore `name` to make,
    /// with the slot it takes under the handle cap meanwhile.
    ///
    /// # Errors
    /// As [`WardlockCtx::acquire_permit`] before it waits.
    pub(crate) fn begin_permit(
        &self,
        name: &str,
        permits: u32,
        timeout: Option<Duration>,
    ) -> Result<(PermitCall, WaitSlot), LockError> {
        let call = PermitCall {
            name: self.admit_permit(name, permits)?,
            permits,
            timeout,
            session: self.session.clone(),
            waits: self.waits.clone(),
        };
        Ok((call, WaitSlot::take(&self.waiting)))
    }

    /// Records the permit `call` waited for; the slot goes, the permit counts.
    ///
    /// # Errors
    /// What the wait failed with.
    pub(crate) fn finish_permit(
        &mut self,
        call: PermitCall,
        slot: WaitSlot,
        answer: Result<Grant, BackendError>,
    ) -> Result<PermitHandle, LockError> {
        drop(slot);
        Ok(self.record_permit(call.name, call.permits, answer?))
    }

    /// The start of a `try-acquire-permit`.
    ///
    /// # Errors
    /// As [`WardlockCtx::try_acquire_permit`] before it asks the backend.
    pub(crate) fn begin_try_permit(
        &self,
        name: &str,
        permits: u32,
    ) -> Result<TryPermitCall, LockError> {
        Ok(TryPermitCall {
            name: self.admit_permit(name, permits)?,
            permits,
            session: self.session.clone(),
        })
    }

    /// Records what the backend answered to `call`.
    ///
    /// # Errors
    /// The backend's error.
    pub(crate) fn finish_try_permit(
        &mut self,
        call: TryPermitCall,
        answer: Result<Option<Grant>, BackendError>,
    ) -> Result<Option<PermitHandle>, LockError> {
        Ok(answer?.map(|grant| self.record_permit(call.name, call.permits, grant)))
    }

    /// The downgrade of record `exclusive` to ask the backend for.
    ///
    /// # Errors
    /// `Lost` when the record is gone.
    pub(crate) fn downgrade_call(
        &self,
        name: LockName,
        exclusive: u64,
    ) -> Result<DowngradeCall, LockError> {
        let Some(grant) = self.locks.get(exclusive).map(|r| r.grant.id) else {
            return Err(LockError::Lost);
        };
        Ok(DowngradeCall {
            name,
            exclusive,
            grant,
            session: self.session.clone(),
        })
    }

    /// Records what the backend answered to `call`: a shared grant, or (for
    /// a backend that cannot downgrade) another handle on the exclusive one.
    ///
    /// # Errors
    /// The backend's error; `Lost` when the exclusive grant went meanwhile
    /// and the backend could not downgrade.
    pub(crate) fn finish_downgrade(
        &mut self,
        call: DowngradeCall,
        answer: Result<Grant, BackendError>,
    ) -> Result<LockHandle, LockError> {
        match answer {
            Ok(shared) => Ok(self.record(call.name, Mode::Shared, shared)),
            Err(BackendError::Unsupported(_)) if self.locks.get(call.exclusive).is_some() => {
                Ok(self.join(call.exclusive, &call.name, Mode::Shared))
            }
            Err(BackendError::Unsupported(_)) => Err(LockError::Lost),
            Err(error) => Err(error.into()),
        }
    }

    /// The start of a `try-acquire` of `name` in `mode`.
    ///
    /// # Errors
    /// As [`WardlockCtx::try_acquire`] before it asks the backend.
    pub(crate) fn begin_try_acquire(
        &mut self,
        name: &str,
        mode: Mode,
    ) -> Result<TryBegun, LockError> {
        let name = self.admit(name)?;
        Ok(match self.join_existing(&name, mode)? {
            Join::Handle(handle) => TryBegun::Joined(handle),
            Join::Downgrade(exclusive) => {
                TryBegun::Downgrade(self.downgrade_call(name, exclusive)?)
            }
            Join::Acquire => TryBegun::Ask(TryCall {
                name,
                mode,
                session: self.session.clone(),
            }),
        })
    }

    /// Records what the backend answered to `call`.
    ///
    /// # Errors
    /// The backend's error.
    pub(crate) fn finish_try_acquire(
        &mut self,
        call: TryCall,
        answer: Result<Option<Grant>, BackendError>,
    ) -> Result<Option<LockHandle>, LockError> {
        Ok(answer?.map(|grant| self.record(call.name, call.mode, grant)))
    }

    /// The revocation request of `name` to make.
    ///
    /// # Errors
    /// `InvalidName`, `Denied` (the name must be granted, as for `acquire`).
    pub(crate) fn revocation_call(&self, name: &str) -> Result<RevocationCall, LockError> {
        Ok(RevocationCall {
            name: self.granted_name(name)?,
            session: self.session.clone(),
        })
    }

    /// The `contenders` listing of `name` to ask the backend for.
    ///
    /// # Errors
    /// `InvalidName`, `Denied` (the name must be granted, as for `acquire`).
    pub(crate) fn contenders_call(&self, name: &str) -> Result<ContendersCall, LockError> {
        Ok(ContendersCall {
            name: self.granted_name(name)?,
            session: self.session.clone(),
        })
    }
}
