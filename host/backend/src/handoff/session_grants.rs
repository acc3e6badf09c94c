//! A guest session's side of host-local hand-off: the grants its lock tasks
//! made, each with what the engine keeps beside it, and their statuses. Every
//! engine whose locks go through [`ask`](super::ask) keeps one per
//! [`LockSession`](crate::LockSession); it answers `release`, `status`,
//! `status_changed` and `downgrade` from it, so an engine writes only how its
//! node's session is doing ([`SessionLookup`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

use super::LocalLocks;
use super::node::SessionHealth;
use super::request::{LocalHeld, downgrade};
use crate::liveness::{grant_status, status_change};
use crate::{BackendError, Grant, GrantId, GrantStatus, StatusChange, settled};

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

/// One grant and what ends it.
struct Held<T> {
    local: LocalHeld,
    /// What the engine keeps beside the grant (its lock name and mode, …).
    extra: T,
    /// Dropped with the grant: wakes its status subscribers with `released`.
    alive: watch::Sender<()>,
}

/// The grants of one session (see the module doc). `T` is what the engine
/// keeps beside each grant.
pub struct SessionGrants<T> {
    held: Mutex<HashMap<u64, Held<T>>>,
    last: AtomicU64,
}

impl<T> Default for SessionGrants<T> {
    fn default() -> Self {
        SessionGrants {
            held: Mutex::new(HashMap::new()),
            last: AtomicU64::new(0),
        }
    }
}

impl<T: Clone> SessionGrants<T> {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held<T>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `local` (with `extra`) and returns the guest's grant: a new id,
    /// the task's token.
    pub fn record(&self, local: LocalHeld, extra: T) -> Grant {
        let token = local.token;
        let id = self.last.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = watch::Sender::new(());
        self.held().insert(
            id,
            Held {
                local,
                extra,
                alive,
            },
        );
        Grant {
            id: GrantId(id),
            token,
        }
    }

    /// The task's grant and the engine's extra of `grant`, if held here.
    pub fn get(&self, grant: GrantId) -> Option<(LocalHeld, T)> {
        self.held()
            .get(&grant.0)
            .map(|h| (h.local.clone(), h.extra.clone()))
    }

    /// Releases `grant`: its task hands the lock on.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when it is not held here.
    pub fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let held = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        held.local.release();
        Ok(())
    }

    /// What `grant` guarantees now: released when not held here, else its
    /// node's session's health.
    pub fn status(&self, grant: GrantId, sessions: &dyn SessionLookup) -> GrantStatus {
        let Some(generation) = self.held().get(&grant.0).map(|h| h.local.generation) else {
            return GrantStatus::Released;
        };
        sessions
            .health(generation)
            .map_or(GrantStatus::Lost, grant_status)
    }

    /// Resolves once `grant`'s status differs from `seen` (see
    /// [`LockSession::status_changed`](crate::LockSession::status_changed)).
    pub fn status_changed(
        &self,
        grant: GrantId,
        seen: GrantStatus,
        sessions: &dyn SessionLookup,
    ) -> StatusChange {
        let watched = self
            .held()
            .get(&grant.0)
            .map(|h| (h.alive.subscribe(), h.local.generation));
        let Some((alive, generation)) = watched else {
            return settled(GrantStatus::Released, seen);
        };
        status_change(alive, sessions.watch(generation), seen)
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

    /// Releases every grant (the session is dropped).
    pub fn release_all(&self) {
        let held: Vec<Held<T>> = self.held().drain().map(|(_, held)| held).collect();
        for held in held {
            held.local.release();
        }
    }
}
