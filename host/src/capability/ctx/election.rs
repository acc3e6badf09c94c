//! Leader election through the WIT (0.2.2 `election`): a leadership is a
//! backend grant of its own (like a permit: no re-entrancy), counted against
//! the handle cap, resigned with its handle or with the instance; observers
//! count as handles too.

use std::time::Duration;

use super::election_calls::{CampaignCall, LeaderCall, LeaderFeed, ProclaimCall};
use super::{GrantStatus, LockError, WardlockCtx};
use crate::backend::{BackendError, Grant, GrantId, Leader};
use crate::capability::handle::Watch;
use crate::capability::leadership::{ElectionObserver, LeadershipHandle};
use crate::capability::pending::WaitSlot;

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
        let (call, slot) = self.campaign_call(name, value, timeout)?;
        let answer = call.run().await;
        self.finish_campaign(call, slot, answer)
    }

    /// The campaign for election `name` to make, with the slot it takes
    /// under the handle cap until it leads.
    ///
    /// # Errors
    /// As [`WardlockCtx::campaign`] before it waits.
    pub(crate) fn campaign_call(
        &self,
        name: &str,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<(CampaignCall, WaitSlot), LockError> {
        let name = self.admit(name)?;
        self.session.election()?;
        let call = CampaignCall {
            name,
            value: value.to_owned(),
            timeout,
            session: self.session.clone(),
            waits: self.waits.clone(),
        };
        Ok((call, WaitSlot::take(&self.waiting)))
    }

    /// Records the leadership `call` won; the slot goes, the leadership
    /// counts as a handle.
    ///
    /// # Errors
    /// What the campaign failed with.
    pub(crate) fn finish_campaign(
        &mut self,
        call: CampaignCall,
        slot: WaitSlot,
        answer: Result<Grant, BackendError>,
    ) -> Result<LeadershipHandle, LockError> {
        drop(slot);
        let grant = answer?;
        self.leaderships.insert(grant.id, call.name.clone());
        self.live_handles += 1;
        tracing::debug!(election = %call.name, term = grant.token, "leads");
        Ok(LeadershipHandle::new(call.name, grant, call.value))
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
        self.leader_call(name)?.run().await
    }

    /// The read of election `name`'s leader, to make away from the
    /// instance's state.
    ///
    /// # Errors
    /// `InvalidName`, `Denied`.
    pub(crate) fn leader_call(&self, name: &str) -> Result<LeaderCall, LockError> {
        Ok(LeaderCall {
            name: self.granted_name(name)?,
            session: self.session.clone(),
        })
    }

    /// A feed of election `name`'s leaders (0.3.0's `observe` stream), which
    /// counts as a handle until dropped.
    ///
    /// # Errors
    /// `InvalidName`, `Denied`, `LimitExceeded`; `InvalidRequest` on an
    /// engine without elections.
    pub(crate) fn leader_feed(&self, name: &str) -> Result<LeaderFeed, LockError> {
        let name = self.admit(name)?;
        self.session.election()?;
        Ok(LeaderFeed::new(
            name,
            self.session.clone(),
            WaitSlot::take(&self.waiting),
        ))
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
        self.proclaim_call(leadership).run(value).await
    }

    /// The proclamation through `leadership` (its
    /// [`WardlockCtx::leadership_grant`]) to make away from the instance's
    /// state.
    pub(crate) fn proclaim_call(&self, leadership: GrantId) -> ProclaimCall {
        ProclaimCall {
            leadership,
            session: self.session.clone(),
        }
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
        self.write_call(leadership, key)?.put(value.to_vec()).await
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
