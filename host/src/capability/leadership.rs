//! The host-side state behind a guest's `leadership` and `observer`
//! resources (WIT 0.2.2 `election`).

use std::sync::Arc;

use super::handle::Watch;
use crate::backend::{Grant, GrantId, Leader, LeaderChange, LockSession};
use crate::name::LockName;

/// One `leadership` of a guest instance: a backend grant of its own, won by
/// `campaign`, resigned with the handle or with the instance.
#[derive(Debug)]
pub struct LeadershipHandle {
    pub(crate) name: LockName,
    pub(crate) grant: Grant,
    /// The value this leader proclaims now.
    pub(crate) value: String,
    pub(crate) released: bool,
    /// What `leadership.subscribe`'s pollable waits on.
    pub(crate) watch: Watch,
}

impl LeadershipHandle {
    pub(crate) fn new(name: LockName, grant: Grant, value: String) -> Self {
        LeadershipHandle {
            name,
            grant,
            value,
            released: false,
            watch: Watch::Idle,
        }
    }

    /// The election's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The term: the leadership's fencing token.
    pub fn term(&self) -> u64 {
        self.grant.token
    }

    /// The value it proclaims now.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The backend grant behind the leadership.
    pub(crate) fn grant_id(&self) -> GrantId {
        self.grant.id
    }
}

super::handle::not_held_pollable!(LeadershipHandle);

/// One `observer` of an election: the leader it last reported, and the
/// backend's watch for a change from it.
pub struct ElectionObserver {
    pub(crate) name: LockName,
    pub(crate) session: Arc<dyn LockSession>,
    /// What `leader` last returned (what `subscribe` compares against).
    pub(crate) seen: Option<Leader>,
    /// The backend's watch, set up on the first wait after each `leader`.
    pub(crate) change: Option<LeaderChange>,
}

impl std::fmt::Debug for ElectionObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElectionObserver")
            .field("name", &self.name)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

impl ElectionObserver {
    /// Resolves once the election's leader differs from the one last
    /// reported (a backend failure counts: the guest's next `leader` call
    /// says what went wrong).
    ///
    /// # Cancellation safety
    /// Cancel safe: the backend's watch stays in the observer.
    pub async fn until_changed(&mut self) {
        let change = self
            .change
            .get_or_insert_with(|| match self.session.election() {
                Ok(election) => election.leader_changed(&self.name, self.seen.clone()),
                Err(error) => Box::pin(std::future::ready(Err(error))),
            });
        let _ = change.as_mut().await;
        // Ready from now on, until the next `leader` re-arms it.
        self.change = Some(Box::pin(std::future::ready(Ok(None))));
    }
}

#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for ElectionObserver {
    async fn ready(&mut self) {
        self.until_changed().await;
    }
}
