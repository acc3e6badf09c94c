//! Leader election through the WIT (0.2.2 `election`): a leadership is a
//! backend grant of its own (like a permit: no re-entrancy), counted against
//! the handle cap, resigned with its handle or with the instance; observers
//! count as handles too.

use std::time::Duration;

use super::guarded::ended_as_released;
use super::{GrantStatus, LockError, WardlockCtx};
use crate::backend::{GrantId, Leader};
use crate::capability::handle::Watch;
use crate::capability::leadership::{ElectionObserver, LeadershipHandle};

impl WardlockCtx {
    /// Campaigns for election `name` with `value`, waiting at most `timeout`.
    ///
    /// # Errors
    /// `InvalidName` / `Denied` for a bad or ungranted name; `LimitExceeded`
    /// at the handle cap or for a value too long; `Timeout`; `Unavailable`,
    /// `Lost`; `InvalidRequest` on an engine without elections.
    ///
    /// # Cancellation safety
    /// Cancel safe: nothing is recorded until the backend granted, and the
    /// backend withdraws a dropped campaign.
    pub async fn campaign(
        &mut self,
        name: &str,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<LeadershipHandle, LockError> {
        let name = self.admit(name)?;
        let election = self.session.election()?;
        let span = tracing::debug_span!("campaign", election = %name);
        let grant = tracing::Instrument::instrument(
            self.waits
                .bound(timeout, |timeout| election.campaign(&name, value, timeout)),
            span,
        )
        .await?;
        self.leaderships.insert(grant.id, name.clone());
        self.live_handles += 1;
        tracing::debug!(election = %name, term = grant.token, "leads");
        Ok(LeadershipHandle::new(name, grant, value.to_owned()))
    }

    /// Who leads election `name` now.
    ///
    /// # Errors
    /// `InvalidName`, `Denied`; `Unavailable`; `InvalidRequest` on an engine
    /// without elections.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn leader(&self, name: &str) -> Result<Option<Leader>, LockError> {
        let name = self.granted_name(name)?;
        Ok(self.session.election()?.leader(&name).await?)
    }

    /// An observer of election `name` (a handle against the cap).
    ///
    /// # Errors
    /// `InvalidName`, `Denied`, `LimitExceeded`.
    pub fn observe(&mut self, name: &str) -> Result<ElectionObserver, LockError> {
        let name = self.admit(name)?;
        self.live_handles += 1;
        Ok(ElectionObserver {
            name,
            session: self.session.clone(),
            seen: None,
            change: None,
        })
    }

    /// The leader `observer` follows, now; `subscribe` compares against it
    /// from then on.
    ///
    /// # Errors
    /// `Unavailable`; `InvalidRequest` on an engine without elections.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn observed_leader(
        &self,
        observer: &mut ElectionObserver,
    ) -> Result<Option<Leader>, LockError> {
        let now = self.session.election()?.leader(&observer.name).await?;
        observer.seen = now.clone();
        observer.change = None;
        Ok(now)
    }

    /// Forgets an observer the guest dropped.
    pub fn drop_observer(&mut self, observer: ElectionObserver) {
        drop(observer);
        self.live_handles = self.live_handles.saturating_sub(1);
    }

    /// Replaces the value leadership `leadership` (its
    /// [`WardlockCtx::leadership_grant`]) proclaims, while it leads.
    ///
    /// # Errors
    /// `Released`; `Lost` when it no longer leads; `LimitExceeded` for a
    /// value too long; `Unavailable`.
    ///
    /// # Cancellation safety
    /// A dropped call may still have proclaimed the value.
    pub async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<(), LockError> {
        self.session
            .election()?
            .proclaim(leadership, value)
            .await
            .map_err(ended_as_released)
    }

    /// Writes `value` under `key` in the election's guarded store, while
    /// `leadership` leads: the write's revision.
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_put`].
    ///
    /// # Cancellation safety
    /// As [`WardlockCtx::guarded_put`].
    pub async fn leader_put(
        &self,
        leadership: GrantId,
        key: &str,
        value: &[u8],
    ) -> Result<u64, LockError> {
        self.put_through(leadership, key, value).await
    }

    /// Steps down.
    ///
    /// # Errors
    /// `Released` if it resigned already (or the host ended it); `Lost` if
    /// the leadership had been lost.
    pub fn resign(&mut self, leadership: &mut LeadershipHandle) -> Result<(), LockError> {
        let id = leadership.grant_id();
        let live = !leadership.released && self.leaderships.remove(&id).is_some();
        leadership.released = true;
        if !live {
            return Err(LockError::Released);
        }
        let lost = self.session.status(id) == GrantStatus::Lost;
        tracing::debug!(election = %leadership.name, term = leadership.term(), "resigned");
        self.writes.release(&*self.session, id)?;
        if lost { Err(LockError::Lost) } else { Ok(()) }
    }

    /// Forgets a leadership the guest dropped, resigning first if needed.
    pub fn drop_leadership(&mut self, mut leadership: LeadershipHandle) {
        self.live_handles = self.live_handles.saturating_sub(1);
        if !leadership.released {
            let _ = self.resign(&mut leadership);
        }
    }

    /// What `leadership` guarantees now.
    pub fn leadership_status(&self, leadership: &LeadershipHandle) -> GrantStatus {
        if leadership.released || !self.leaderships.contains_key(&leadership.grant_id()) {
            return GrantStatus::Released;
        }
        self.session.status(leadership.grant_id())
    }

    /// Subscribes `leadership` to its grant's status (`leadership.subscribe`).
    pub fn subscribe_leadership(&self, leadership: &mut LeadershipHandle) {
        if !matches!(leadership.watch, Watch::Idle) {
            return;
        }
        leadership.watch = if self.leaderships.contains_key(&leadership.grant_id()) {
            Watch::Waiting(
                self.session
                    .status_changed(leadership.grant_id(), GrantStatus::Held),
            )
        } else {
            Watch::Done
        };
    }

    /// Resigns every leadership (the instance's end, or `release_all`).
    pub(super) fn resign_all(&mut self) {
        for (id, _) in self.leaderships.drain() {
            let _ = self.writes.release(&*self.session, id);
        }
    }

    /// The grant of `leadership`, for [`WardlockCtx::proclaim`] and
    /// [`WardlockCtx::leader_put`].
    ///
    /// # Errors
    /// `Released` once the guest resigned it (or the host ended it).
    pub fn leadership_grant(&self, leadership: &LeadershipHandle) -> Result<GrantId, LockError> {
        let id = leadership.grant_id();
        if leadership.released || !self.leaderships.contains_key(&id) {
            return Err(LockError::Released);
        }
        Ok(id)
    }
}
