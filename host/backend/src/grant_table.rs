//! The grants of one lock session, for every engine: each grant's entry (what
//! the engine keeps for it: a node of its own, a share of the host's node
//! through hand-off, a permit's lease, a leadership), its id, and the signal
//! that ends its status subscriptions. An engine's session keeps one
//! [`GrantTable`] and answers `release`, `status` and `status_changed` from
//! it, telling it only how the grant's session is doing; dropping the table
//! releases every grant left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

use crate::handoff::SessionHealth;
use crate::liveness::{grant_status, status_change};
use crate::{BackendError, Grant, GrantId, GrantStatus, StatusChange, settled};

/// What an engine keeps for one grant in a [`GrantTable`].
pub trait GrantEntry: Send + 'static {
    /// The fencing token the grant carries.
    fn token(&self) -> u64;

    /// Ends the grant, without waiting: a node deleted in the background, a
    /// local grant handed on. Called once, on release or when the table is
    /// dropped.
    fn release(self);
}

/// One grant and what ends it.
struct Slot<E> {
    entry: E,
    /// Dropped with the grant: wakes its status subscribers with `released`.
    alive: watch::Sender<()>,
}

/// The grants of one lock session (see the module doc).
pub struct GrantTable<E: GrantEntry> {
    held: Mutex<HashMap<u64, Slot<E>>>,
    last: AtomicU64,
}

impl<E: GrantEntry> Default for GrantTable<E> {
    fn default() -> Self {
        GrantTable {
            held: Mutex::new(HashMap::new()),
            last: AtomicU64::new(0),
        }
    }
}

impl<E: GrantEntry> GrantTable<E> {
    fn held(&self) -> MutexGuard<'_, HashMap<u64, Slot<E>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `entry` and returns the guest's grant: a new id, the entry's
    /// token.
    pub fn record(&self, entry: E) -> Grant {
        let token = entry.token();
        let id = self.last.fetch_add(1, Ordering::Relaxed) + 1;
        let alive = watch::Sender::new(());
        self.held().insert(id, Slot { entry, alive });
        Grant {
            id: GrantId(id),
            token,
        }
    }

    /// `f` on `grant`'s entry, and a receiver that sees the grant end (its
    /// sender is dropped with the grant); `None` when `grant` is not held
    /// here. Runs under the table's lock: keep `f` short, and never await
    /// in it.
    pub fn with<R>(
        &self,
        grant: GrantId,
        f: impl FnOnce(&mut E, watch::Receiver<()>) -> R,
    ) -> Option<R> {
        let mut held = self.held();
        let slot = held.get_mut(&grant.0)?;
        let ended = slot.alive.subscribe();
        Some(f(&mut slot.entry, ended))
    }

    /// Releases `grant` ([`GrantEntry::release`]).
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when it is not held here.
    pub fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let slot = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        slot.entry.release();
        Ok(())
    }

    /// What `grant` guarantees now: released when not held here, else what
    /// the health of its session allows (`health`: `None` when that session
    /// is over).
    pub fn status(
        &self,
        grant: GrantId,
        health: impl FnOnce(&E) -> Option<SessionHealth>,
    ) -> GrantStatus {
        match self.with(grant, |entry, _| health(entry)) {
            None => GrantStatus::Released,
            Some(None) => GrantStatus::Lost,
            Some(Some(health)) => grant_status(health),
        }
    }

    /// Resolves once `grant`'s status differs from `seen` (see
    /// [`LockSession::status_changed`](crate::LockSession::status_changed)),
    /// woken by the grant's end and by what its session publishes (`watch`:
    /// the session's published health, computed now; `None` when the session
    /// is over).
    pub fn status_changed(
        &self,
        grant: GrantId,
        seen: GrantStatus,
        watch: impl FnOnce(&E) -> Option<watch::Receiver<SessionHealth>>,
    ) -> StatusChange {
        match self.with(grant, |entry, ended| (ended, watch(entry))) {
            None => settled(GrantStatus::Released, seen),
            Some((ended, health)) => status_change(ended, health, seen),
        }
    }

    /// Releases every grant (the session is dropped).
    pub fn release_all(&self) {
        let slots: Vec<Slot<E>> = self.held().drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            slot.entry.release();
        }
    }
}

impl<E: GrantEntry> Drop for GrantTable<E> {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    struct Entry {
        token: u64,
        released: Arc<AtomicU64>,
    }

    impl GrantEntry for Entry {
        fn token(&self) -> u64 {
            self.token
        }

        fn release(self) {
            self.released.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn entry(token: u64, released: &Arc<AtomicU64>) -> Entry {
        Entry {
            token,
            released: released.clone(),
        }
    }

    #[test]
    fn grants_are_released_once_by_release_or_by_the_drop() {
        let released = Arc::new(AtomicU64::new(0));
        let table = GrantTable::default();
        let first = table.record(entry(7, &released));
        let second = table.record(entry(9, &released));
        assert_eq!((first.token, second.token), (7, 9));
        assert_ne!(first.id, second.id);
        table.release(first.id).expect("held");
        assert_eq!(
            table.release(first.id),
            Err(BackendError::UnknownGrant(first.id.0))
        );
        assert_eq!(released.load(Ordering::SeqCst), 1);
        drop(table);
        assert_eq!(
            released.load(Ordering::SeqCst),
            2,
            "the drop released the rest"
        );
    }

    #[test]
    fn status_follows_the_session_and_the_release() {
        let released = Arc::new(AtomicU64::new(0));
        let table = GrantTable::default();
        let grant = table.record(entry(1, &released));
        let live = |_: &Entry| Some(SessionHealth::Live);
        assert_eq!(table.status(grant.id, live), GrantStatus::Held);
        let over = |_: &Entry| None;
        assert_eq!(table.status(grant.id, over), GrantStatus::Lost);
        table.release(grant.id).expect("held");
        assert_eq!(table.status(grant.id, live), GrantStatus::Released);
    }

    #[tokio::test]
    async fn a_release_wakes_a_status_subscriber() {
        let released = Arc::new(AtomicU64::new(0));
        let table = GrantTable::default();
        let grant = table.record(entry(1, &released));
        let (_publisher, health) = watch::channel(SessionHealth::Live);
        let change = table.status_changed(grant.id, GrantStatus::Held, |_| Some(health));
        table.release(grant.id).expect("held");
        assert_eq!(change.await, GrantStatus::Released);
    }
}
