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

use super::BackendError;

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

/// The future [`LockSession::leader_changed`](super::LockSession::leader_changed)
/// returns: the leader once it differs from the one seen (or `None` when
/// nobody leads any more).
pub type LeaderChange =
    Pin<Box<dyn Future<Output = Result<Option<Leader>, BackendError>> + Send + 'static>>;

/// Refuses a value longer than [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`BackendError::LimitExceeded`] naming the size and the limit.
pub fn check_value(value: &str) -> Result<(), BackendError> {
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
