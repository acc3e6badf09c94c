//! A guest session's side of host-local hand-off: the grants its lock tasks
//! made, each with what the engine keeps beside it, and their statuses. Every
//! engine whose locks go through [`ask`](super::ask) keeps one per
//! [`LockSession`](crate::LockSession), and `release`, `status`,
//! `status_changed` and `downgrade` are answered from it ([`HandoffSession`](super::HandoffSession)
//! does so), so an engine writes only how its node's session is doing
//! ([`SessionLookup`]). Dropping it releases every grant it still keeps.

use tokio::sync::watch;

use super::LocalLocks;
use super::node::SessionHealth;
use super::request::{LocalHeld, downgrade};
use crate::grant_table::{GrantEntry, GrantTable};
use crate::{BackendError, Grant, GrantId, GrantStatus, StatusChange};

/// How a node's session is doing, by generation ([`LocalHeld::generation`]):
/// what an engine tells [`SessionGrants`].
pub trait SessionLookup {
    /// The health of the session `generation` now; `None` when it is over
    /// (or unknown).
    fn health(&self, generation: u64) -> Option<SessionHealth>;

    /// The health the session `generation` publishes, computed now (so a
    /// subscriber starts from the current value); `None` when it is over.
    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>>;
}

/// A grant through a lock task, and what the engine keeps beside it.
struct LocalGrant<T> {
    local: LocalHeld,
    /// What the engine keeps beside the grant (its lock name and mode, …).
    extra: T,
}

impl<T: Send + 'static> GrantEntry for LocalGrant<T> {
    fn token(&self) -> u64 {
        self.local.token
    }

    fn release(self) {
        self.local.release();
    }
}

/// The grants of one session (see the module doc): a [`GrantTable`] whose
/// entries are grants of lock tasks. `T` is what the engine keeps beside
/// each grant.
pub struct SessionGrants<T: Send + 'static> {
    table: GrantTable<LocalGrant<T>>,
}

impl<T: Send + 'static> Default for SessionGrants<T> {
    fn default() -> Self {
        SessionGrants {
            table: GrantTable::default(),
        }
    }
}

impl<T: Clone + Send + 'static> SessionGrants<T> {
    /// Keeps `local` (with `extra`) and returns the guest's grant: a new id,
    /// the task's token.
    pub fn record(&self, local: LocalHeld, extra: T) -> Grant {
        self.table.record(LocalGrant { local, extra })
    }

    /// The task's grant and the engine's extra of `grant`, if held here.
    pub fn get(&self, grant: GrantId) -> Option<(LocalHeld, T)> {
        self.table
            .with(grant, |held, _| (held.local.clone(), held.extra.clone()))
    }

    /// Releases `grant`: its task hands the lock on.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when it is not held here.
    pub fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        self.table.release(grant)
    }

    /// What `grant` guarantees now: released when not held here, else its
    /// node's session's health.
    pub fn status(&self, grant: GrantId, sessions: &dyn SessionLookup) -> GrantStatus {
        self.table
            .status(grant, |held| sessions.health(held.local.generation))
    }

    /// Resolves once `grant`'s status differs from `seen` (see
    /// [`LockSession::status_changed`](crate::LockSession::status_changed)).
    pub fn status_changed(
        &self,
        grant: GrantId,
        seen: GrantStatus,
        sessions: &dyn SessionLookup,
    ) -> StatusChange {
        self.table
            .status_changed(grant, seen, |held| sessions.watch(held.local.generation))
    }

    /// A shared grant beside exclusive grant `exclusive` (a downgrade at its
    /// task), kept with `extra`.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `exclusive` is not held here (or
    /// not exclusively at its task).
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`downgrade`].
    pub async fn downgrade(
        &self,
        locks: &LocalLocks,
        exclusive: GrantId,
        extra: impl FnOnce(T) -> T,
    ) -> Result<Grant, BackendError> {
        let (local, kept) = self
            .get(exclusive)
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let shared = downgrade(locks, &local).await?;
        Ok(self.record(shared, extra(kept)))
    }
}
