//! What the hand-off layer knows of an engine's node and session: the node a
//! host queued and holds, what its session can vouch for, and a deadline.
//! Engine-neutral: ZooKeeper's node is a path, etcd's a key.

use std::time::Duration;

use tokio::time::Instant;

use crate::BackendError;

/// A lock node (ZooKeeper) or key (etcd) this host created and holds.
#[derive(Debug, Clone)]
pub struct OwnedNode {
    /// Its full path or key.
    pub path: String,
    /// What identifies it among its lock's contenders (ZooKeeper: the node
    /// name's prefix; etcd: the key itself), for a release that must find it.
    pub prefix: String,
    /// The engine session (ZooKeeper session, etcd lease) it lives in.
    pub generation: u64,
    /// The grant's fencing token (see the engine's recipe).
    pub token: u64,
}

/// What the host may claim about an engine session right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionHealth {
    /// Connected and heard from recently.
    Live,
    /// Contact interrupted; the service cannot have expired the session yet.
    Suspended,
    /// The service may have expired the session (or did).
    Ended,
}

/// The deadline `timeout` from now sets (`None`: no deadline): how a wait's
/// timeout becomes the deadline [`until`] and the lock tasks take.
pub fn deadline_after(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

/// Runs `future` until `deadline`.
///
/// # Errors
/// [`BackendError::Timeout`] when `deadline` passed first.
///
/// # Cancellation safety
/// As cancel safe as `future`.
pub async fn until<T>(
    deadline: Option<Instant>,
    future: impl Future<Output = T>,
) -> Result<T, BackendError> {
    match deadline {
        None => Ok(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline, future)
            .await
            .map_err(|_| BackendError::Timeout),
    }
}
