//! Leader election: "run this on exactly one host". A candidate campaigns for
//! an election name with a value (who it is, where it serves); the earliest
//! candidate still standing leads, the others wait in arrival order, each
//! watching the one before it (no herd). Leadership is a [`Grant`] of the
//! session like a lock's, with the same loss rules (told `lost` no later than
//! another candidate can win), a fencing token that serves as the term
//! (strictly increasing across leaders), release as resignation, and a
//! standing exclusive grant for guarded writes.
//!
//! Layouts, each shared with what users of the engine already run:
//! ZooKeeper, Curator's `LeaderLatch` (`latch-` sequential nodes under
//! `<root>/NAME`, the value as node data); etcd, Go's `concurrency.Election`
//! (`etcdctl elect`: `<root>/NAME/<lease hex>`, the value as the key's value,
//! leader = smallest create revision); memory, a queue per election name of
//! its own.
//!
//! [`Grant`]: super::Grant

use std::pin::Pin;

use std::time::Duration;

use super::{BackendError, Result};
use crate::name::LockName;
use crate::{Grant, GrantId};

/// The longest value a candidate may proclaim, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;

/// Who leads an election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// Who leads, as the lock service records it (memory: the session's
    /// owner; ZooKeeper: the node's name; etcd: `lease <hex>`).
    pub owner: String,
    /// The value the leader proclaimed (Curator: its participant id).
    pub value: String,
    /// The leader's term: its fencing token, strictly greater than every
    /// earlier leader's.
    pub term: u64,
}

/// The future [`Election::leader_changed`]
/// returns: the leader once it differs from the one seen (or `None` when
/// nobody leads any more).
pub type LeaderChange = Pin<Box<dyn Future<Output = Result<Option<Leader>>> + Send + 'static>>;

/// Refuses a value longer than [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`BackendError::LimitExceeded`] naming the size and the limit.
pub fn check_value(value: &str) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(BackendError::LimitExceeded(format!(
            "an election value is {} bytes long; at most {MAX_VALUE_BYTES} are allowed",
            value.len()
        )));
    }
    Ok(())
}

/// The error of a backend without elections.
pub fn no_elections() -> BackendError {
    BackendError::Unsupported("this lock backend has no leader election".into())
}

/// Whether `changed` is a change from `seen`: another leader, another term,
/// or another value.
pub fn differs(seen: Option<&Leader>, now: Option<&Leader>) -> bool {
    match (seen, now) {
        (None, None) => false,
        (Some(seen), Some(now)) => seen.term != now.term || seen.value != now.value,
        _ => true,
    }
}

/// A candidate in an election: the election's name and the value it
/// proclaims while it leads. What [`Election::campaign_request`] takes, as a
/// lock's [`Request`](crate::Request) is what
/// [`LockSession::acquire_request`](crate::LockSession::acquire_request)
/// takes: a candidacy can gain a field without every engine's signature
/// changing.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The election.
    pub name: &'a LockName,
    /// What the candidate proclaims once it leads (at most
    /// [`MAX_VALUE_BYTES`]).
    pub value: &'a str,
}

/// Leader election over the lock service: a capability of a
/// [`LockSession`](crate::LockSession) ([`LockSession::election`](crate::LockSession::election)).
#[async_trait::async_trait]
pub trait Election: Send + Sync {
    /// Campaigns for election `name` with `value` (see [`election`](crate::election)): waits
    /// until this candidate leads, or until `timeout` passes. The leadership
    /// is a [`Grant`] of this session (its token is the term): released by
    /// [`LockSession::release`](crate::LockSession::release) (resigning) or with the session, reported by
    /// [`LockSession::status`](crate::LockSession::status) and [`LockSession::status_changed`](crate::LockSession::status_changed) under the
    /// loss rules of a lock, and an exclusive holder for guarded writes.
    ///
    /// # Errors
    /// [`BackendError::Timeout`]; [`BackendError::Unavailable`];
    /// [`BackendError::Lost`] when the session ended while waiting;
    /// [`BackendError::LimitExceeded`] for a value above
    /// [`MAX_VALUE_BYTES`].
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`](crate::LockSession::acquire_request): a dropped campaign
    /// leaves no candidate behind.
    async fn campaign(
        &self,
        name: &LockName,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.campaign_request(Candidate { name, value }, timeout)
            .await
    }

    /// [`Election::campaign`] for `candidate`: what an engine implements.
    ///
    /// # Errors
    /// As [`Election::campaign`].
    ///
    /// # Cancellation safety
    /// As [`Election::campaign`]: a dropped campaign leaves no candidate
    /// behind.
    async fn campaign_request(
        &self,
        candidate: Candidate<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant>;

    /// Replaces the value the leadership `leadership` proclaims, only while
    /// it leads (on etcd a put guarded by the leader key's create revision,
    /// as `Proclaim`; on ZooKeeper the latch node's data — which wakes a
    /// Curator 5 `LeaderLatch` waiting right behind the leader without its
    /// re-arming its watch: see docs/election.md).
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `leadership` is not held here;
    /// [`BackendError::Lost`] when it no longer leads; `LimitExceeded`,
    /// `Unavailable` as for [`Election::campaign`];
    /// [`BackendError::InvalidRequest`] for a grant that is no leadership.
    ///
    /// # Cancellation safety
    /// A dropped call may still have proclaimed the value.
    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<()>;

    /// Who leads election `name` now (`None`: nobody campaigns). Other
    /// hosts' and foreign clients' candidates count (Curator's
    /// `LeaderLatch`, `etcdctl elect`).
    ///
    /// # Errors
    /// [`BackendError::Unavailable`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn leader(&self, name: &LockName) -> Result<Option<Leader>>;

    /// Resolves with election `name`'s leader once it differs from `seen`
    /// (another leader or term, another value, or nobody): at once if it
    /// differs already. Event driven: the change wakes it (a watch), never a
    /// polling loop.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange;
}
