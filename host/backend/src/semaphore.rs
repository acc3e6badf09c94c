//! Semaphores: a capability of a [`LockSession`] ([`LockSession::semaphores`]).
//! A permit is asked for through the session's own `acquire_request`, so
//! whatever wraps the session sees permits as it sees locks.

use std::time::Duration;

use crate::name::LockName;
use crate::{BackendError, Grant, LockSession, Request, Result};

/// Counting semaphores over the lock names: an engine that has them
/// implements this (with no methods of its own) and answers
/// [`LockSession::semaphores`] with itself.
#[async_trait::async_trait]
pub trait Semaphores: LockSession {
    /// Waits until one of the `permits` permits of semaphore `name` is granted
    /// (at most `permits` holders at once, waiters served in arrival order),
    /// or until `timeout` passes.
    ///
    /// A permit is a [`Grant`] like a lock's: released by
    /// [`LockSession::release`] or with the session, reported by
    /// [`LockSession::status`] and [`LockSession::status_changed`]; it cannot
    /// be downgraded ([`BackendError::InvalidRequest`]). A
    /// semaphore's names are the locks' names: a name is used either as a lock
    /// or as a semaphore, never both at once.
    ///
    /// Fencing token: permits do not conflict with each other, so the lock
    /// rule gives nothing; instead a permit's token is strictly greater than
    /// the token of every permit of the same semaphore granted before it
    /// (memory: a backend-wide counter taken at grant; ZooKeeper: the `czxid`
    /// of the lease node, which is created under the semaphore's internal
    /// mutex, held until the lease is granted, so leases are created in grant
    /// order; this holds among clients that take the mutex, as Curator does).
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] when `permits` is 0, or differs from
    /// the count the semaphore's current holders and waiters use (memory;
    /// ZooKeeper cannot see other clients' counts, as in Curator);
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`]: dropping the future leaves
    /// nothing queued and nothing held (on ZooKeeper: no lease node and no
    /// internal mutex node).
    async fn acquire_permit(
        &self,
        name: &LockName,
        permits: u32,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.acquire_request(Request::permit(name, permits), timeout)
            .await
    }

    /// Takes a permit of semaphore `name` only if that needs no waiting;
    /// `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`Semaphores::acquire_permit`], without `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`Semaphores::acquire_permit`].
    async fn try_acquire_permit(&self, name: &LockName, permits: u32) -> Result<Option<Grant>> {
        self.try_acquire_request(Request::permit(name, permits))
            .await
    }
}

/// Rejects a semaphore request for zero permits.
///
/// # Errors
/// [`BackendError::InvalidRequest`] naming the count and the semaphore.
pub fn check_permits(name: &LockName, permits: u32) -> Result<()> {
    if permits == 0 {
        return Err(BackendError::InvalidRequest(format!(
            "semaphore \"{name}\" asked for 0 permits; a semaphore needs at least 1"
        )));
    }
    Ok(())
}
