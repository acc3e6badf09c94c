//! Election calls split for WIT 0.3.0's concurrent host functions, as the
//! lock calls are (`detached.rs`): a synchronous start on the instance's
//! state, then the backend call away from it. 0.2.2's calls go through the
//! same pieces, awaited in place.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tracing::Instrument;

use super::LockError;
use super::guarded::ended_as_released;
use crate::backend::{BackendError, Grant, GrantId, Leader, LeaderChange, LockSession};
use crate::capability::pending::WaitSlot;
use crate::capability::wait_bounds::WaitBounds;
use crate::name::LockName;

/// A campaign to make ([`WardlockCtx::campaign_call`](super::WardlockCtx::campaign_call)).
pub(crate) struct CampaignCall {
    pub(super) name: LockName,
    pub(super) value: String,
    pub(super) timeout: Option<Duration>,
    pub(super) session: Arc<dyn LockSession>,
    pub(super) waits: WaitBounds,
}

impl CampaignCall {
    /// Waits until the candidate leads, for at most the call's timeout (and
    /// the embedder's bounds), in a debug span.
    ///
    /// # Errors
    /// `Timeout`; the backend's failures and refusals.
    ///
    /// # Cancellation safety
    /// Cancel safe: the backend withdraws a dropped campaign, leaving no
    /// candidate behind.
    pub(crate) async fn run(&self) -> Result<Grant, BackendError> {
        let election = self.session.election()?;
        let span = tracing::debug_span!("campaign", election = %self.name);
        self.waits
            .bound(self.timeout, |timeout| {
                election.campaign(&self.name, &self.value, timeout)
            })
            .instrument(span)
            .await
    }
}

/// A read of an election's leader ([`WardlockCtx::leader_call`](super::WardlockCtx::leader_call)).
pub(crate) struct LeaderCall {
    pub(super) name: LockName,
    pub(super) session: Arc<dyn LockSession>,
}

impl LeaderCall {
    /// Who leads now (`None`: nobody campaigns).
    ///
    /// # Errors
    /// `Unavailable`; `InvalidRequest` on an engine without elections.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub(crate) async fn run(&self) -> Result<Option<Leader>, LockError> {
        Ok(self.session.election()?.leader(&self.name).await?)
    }
}

/// A proclamation through a leadership ([`WardlockCtx::proclaim_call`](super::WardlockCtx::proclaim_call)).
pub(crate) struct ProclaimCall {
    pub(super) leadership: GrantId,
    pub(super) session: Arc<dyn LockSession>,
}

impl ProclaimCall {
    /// Replaces the value the leadership proclaims, while it leads.
    ///
    /// # Errors
    /// `Released` for a leadership the session no longer knows; `Lost` when
    /// it no longer leads; `LimitExceeded` for a value too long;
    /// `Unavailable`.
    ///
    /// # Cancellation safety
    /// A dropped call may still have proclaimed the value.
    pub(crate) async fn run(&self, value: &str) -> Result<(), LockError> {
        self.session
            .election()?
            .proclaim(self.leadership, value)
            .await
            .map_err(ended_as_released)
    }
}

/// An election's leaders as they change ([`WardlockCtx::leader_feed`](super::WardlockCtx::leader_feed)):
/// the leader now, then each leader that differs from the one before, each
/// waited for with the backend's watch. It ends at the backend's first
/// failure. It holds a slot under the instance's handle cap while it lives.
pub(crate) struct LeaderFeed {
    name: LockName,
    session: Arc<dyn LockSession>,
    /// The read or watch whose answer is the next leader; `None` once ended.
    next: Option<LeaderChange>,
    _slot: WaitSlot,
}

impl LeaderFeed {
    pub(super) fn new(name: LockName, session: Arc<dyn LockSession>, slot: WaitSlot) -> Self {
        let first: LeaderChange = {
            let (name, session) = (name.clone(), session.clone());
            Box::pin(async move { session.election()?.leader(&name).await })
        };
        LeaderFeed {
            name,
            session,
            next: Some(first),
            _slot: slot,
        }
    }

    /// The next leader: `Some(leader)` (`leader` is `None` while nobody
    /// campaigns), or `None` once the feed ended (the backend failed).
    ///
    /// # Cancellation safety
    /// Cancel safe: the read or watch under way stays in the feed, and the
    /// next poll goes on with it.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Option<Leader>>> {
        let Some(next) = self.next.as_mut() else {
            return Poll::Ready(None);
        };
        match next.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(leader)) => {
                self.next = match self.session.election() {
                    Ok(election) => Some(election.leader_changed(&self.name, leader.clone())),
                    Err(_) => None,
                };
                Poll::Ready(Some(leader))
            }
            Poll::Ready(Err(error)) => {
                tracing::debug!(election = %self.name, %error, "leader feed ends");
                self.next = None;
                Poll::Ready(None)
            }
        }
    }
}
