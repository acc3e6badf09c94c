//! WIT 0.3.0's `lock.not-held`: a future, independent of the handle, that
//! resolves once the handle is no longer held.

use std::future::Future;
use std::pin::Pin;

use std::sync::atomic::Ordering;

use super::{LockError, LockHandle, WardlockCtx};
use crate::backend::{GrantId, GrantStatus};
use crate::capability::leadership::LeadershipHandle;
use crate::capability::pending::WaitSlot;
use crate::capability::permit::PermitHandle;

/// Resolves with a handle's status once it is no longer `held`.
pub(crate) type NotHeld = Pin<Box<dyn Future<Output = GrantStatus> + Send + 'static>>;

impl WardlockCtx {
    /// A slot for one more open `not-held` or `revoked` future (WIT 0.3.0),
    /// which the future keeps until it completes or the guest drops it. An
    /// instance may keep as many open as its handle cap: each is a guest
    /// handle and a watch on the host, so a guest asking for futures in a
    /// loop must meet a bound as a guest asking for locks does.
    ///
    /// # Errors
    /// `LimitExceeded`, naming the cap, when that many are open.
    pub(crate) fn future_slot(&self) -> Result<WaitSlot, LockError> {
        let cap = self.policy.max_handles();
        if self.open_futures.load(Ordering::SeqCst) >= cap {
            return Err(LockError::LimitExceeded(format!(
                "this instance already has {cap} open not-held and revoked futures, the most allowed (its handle cap); drop some first"
            )));
        }
        Ok(WaitSlot::take(&self.open_futures))
    }

    /// A future that resolves once `handle` is no longer held, with its
    /// status then: at once when it is not held now; else when its grant's
    /// status moves away from `held` (the backend wakes it, as it wakes
    /// `lock.subscribe`'s pollable), or with `released` when the handle is
    /// released or dropped (a re-entrant handle's grant may outlive it).
    pub(crate) fn not_held(&self, handle: &mut LockHandle) -> NotHeld {
        let now = self.status(handle);
        let grant = self.locks.get(handle.record).map(|record| record.grant.id);
        let (GrantStatus::Held, Some(grant)) = (now, grant) else {
            return Box::pin(std::future::ready(now));
        };
        let changed = self.session.status_changed(grant, GrantStatus::Held);
        let released = handle.released_later();
        Box::pin(async move {
            tokio::select! {
                status = changed => status,
                () = released => GrantStatus::Released,
            }
        })
    }

    /// As [`WardlockCtx::not_held`] for a permit: a permit is a grant of its
    /// own (no re-entrancy), so its release ends the grant and completes the
    /// future with `released`.
    pub(crate) fn permit_not_held(&self, handle: &PermitHandle) -> NotHeld {
        self.grant_not_held(self.permit_status(handle), handle.grant_id())
    }

    /// As [`WardlockCtx::permit_not_held`] for a leadership: resigning it
    /// ends its grant and completes the future with `released`.
    pub(crate) fn leadership_not_held(&self, handle: &LeadershipHandle) -> NotHeld {
        self.grant_not_held(self.leadership_status(handle), handle.grant_id())
    }

    /// Resolves at once with `now` unless it is `held`; else once `grant`'s
    /// status moves away from `held`.
    fn grant_not_held(&self, now: GrantStatus, grant: GrantId) -> NotHeld {
        match now {
            GrantStatus::Held => self.session.status_changed(grant, GrantStatus::Held),
            now => Box::pin(std::future::ready(now)),
        }
    }
}
