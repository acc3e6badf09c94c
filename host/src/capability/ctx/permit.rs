//! Semaphore permits (WIT 0.2.0 `acquire-permit`): each permit is a backend
//! grant of its own (no re-entrancy), counted against the handle cap like a
//! lock handle, released with its handle or with the instance.

use std::time::Duration;

use super::{GrantStatus, LockError, Mode, WardlockCtx};
use crate::backend::{Request, check_permits};
use crate::capability::handle::Watch;
use crate::capability::permit::PermitHandle;
use crate::name::LockName;

impl WardlockCtx {
    /// Waits for one of the `permits` permits of semaphore `name`, for at
    /// most `timeout`.
    ///
    /// # Errors
    /// `InvalidName` / `Denied` for a bad or ungranted name; `LimitExceeded`
    /// at the handle cap (a permit counts as a handle); `InvalidRequest` for 0
    /// permits, or when the backend refuses the count or the name (in use as a
    /// lock, or as a semaphore of another count, on the memory backend);
    /// `Timeout`; `Unavailable`, `Lost` from the backend.
    ///
    /// # Cancellation safety
    /// Cancel safe: nothing is recorded until the backend granted, and the
    /// backend withdraws a dropped wait.
    pub async fn acquire_permit(
        &mut self,
        name: &str,
        permits: u32,
        timeout: Option<Duration>,
    ) -> Result<PermitHandle, LockError> {
        let name = self.admit_permit(name, permits)?;
        let grant = self
            .acquire_traced(Request::permit(&name, permits), timeout)
            .await?;
        Ok(self.record_permit(name, permits, grant))
    }

    /// Takes a permit of semaphore `name` if that needs no waiting.
    ///
    /// # Errors
    /// As [`WardlockCtx::acquire_permit`], without `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`WardlockCtx::acquire_permit`].
    pub async fn try_acquire_permit(
        &mut self,
        name: &str,
        permits: u32,
    ) -> Result<Option<PermitHandle>, LockError> {
        let name = self.admit_permit(name, permits)?;
        // As `acquire_permit`, through the session's own request: an engine
        // without semaphores refuses it in its own words.
        let grant = self
            .session
            .try_acquire_request(Request::permit(&name, permits))
            .await?;
        Ok(grant.map(|grant| self.record_permit(name, permits, grant)))
    }

    /// Releases the permit of `handle`.
    ///
    /// # Errors
    /// `Released` if it was released already (by the guest or by
    /// [`WardlockCtx::release_all`]); `Lost` if the permit had been lost.
    pub fn release_permit(&mut self, handle: &mut PermitHandle) -> Result<(), LockError> {
        let id = handle.grant_id();
        let live = !handle.released && self.permits.remove(&id).is_some();
        handle.released = true;
        if !live {
            return Err(LockError::Released);
        }
        let lost = self.session.status(id) == GrantStatus::Lost;
        tracing::debug!(semaphore = %handle.name, token = handle.grant.token, "released");
        self.session.release(id)?;
        if lost { Err(LockError::Lost) } else { Ok(()) }
    }

    /// Forgets a permit the guest dropped, releasing it first if needed.
    pub fn drop_permit(&mut self, mut handle: PermitHandle) {
        self.live_handles = self.live_handles.saturating_sub(1);
        if !handle.released {
            // Lost or not, the permit is gone for this guest either way.
            let _ = self.release_permit(&mut handle);
        }
    }

    /// What the permit of `handle` currently guarantees.
    pub fn permit_status(&self, handle: &PermitHandle) -> GrantStatus {
        if handle.released || !self.permits.contains_key(&handle.grant_id()) {
            return GrantStatus::Released;
        }
        self.session.status(handle.grant_id())
    }

    /// Subscribes `handle` to its permit's status (`permit.subscribe`):
    /// [`PermitHandle::until_not_held`] resolves once it is released or no
    /// longer `held`, woken by the backend ([`crate::LockSession::status_changed`]).
    pub fn subscribe_permit(&self, handle: &mut PermitHandle) {
        if !matches!(handle.watch, Watch::Idle) {
            return;
        }
        handle.watch = if self.permits.contains_key(&handle.grant_id()) {
            Watch::Waiting(
                self.session
                    .status_changed(handle.grant_id(), GrantStatus::Held),
            )
        } else {
            Watch::Done
        };
    }

    /// Releases every permit the instance holds (its end, or
    /// [`WardlockCtx::release_all`]); their handles report `released`.
    pub(super) fn release_permits(&mut self) {
        for (id, _) in self.permits.drain() {
            let _ = self.session.release(id);
        }
    }

    /// Validates a permit request: the name's syntax and grant, the handle
    /// cap, at least one permit, and a name this instance does not hold as a
    /// lock (on every backend, though only the memory backend can tell for
    /// other instances).
    pub(super) fn admit_permit(&self, name: &str, permits: u32) -> Result<LockName, LockError> {
        let name = self.admit(name)?;
        check_permits(&name, permits)?;
        if self.locks.holds(&name) {
            return Err(LockError::InvalidRequest(format!(
                "\"{name}\" is in use as a lock by this instance; asked for a semaphore of {permits} permits"
            )));
        }
        Ok(name)
    }

    /// Refuses a lock request for a name this instance holds permits of.
    pub(super) fn not_a_semaphore(&self, name: &LockName, mode: Mode) -> Result<(), LockError> {
        match self.permits.values().find(|held| *held == name) {
            Some(_) => Err(LockError::InvalidRequest(format!(
                "\"{name}\" is in use as a semaphore by this instance; asked for a {mode} lock"
            ))),
            None => Ok(()),
        }
    }

    pub(super) fn record_permit(
        &mut self,
        name: LockName,
        permits: u32,
        grant: crate::backend::Grant,
    ) -> PermitHandle {
        self.permits.insert(grant.id, name.clone());
        self.live_handles += 1;
        PermitHandle::new(name, permits, grant)
    }
}

#[cfg(test)]
mod tests;
