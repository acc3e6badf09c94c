//! The hold lease: a hard bound on how long one instance may keep any lock.
//!
//! Platforms need to take a lock back from a plugin that sits on it (a stuck
//! request, a guest that forgot to release). Its observer (an [`Observed`] session) watches an
//! instance's lock session and remembers when each grant was made; [`Lease`]
//! resolves once some grant has been held longer than the bound. The runner
//! then marks every grant `lost` and stops the instance, whose Store drop
//! releases them — the same path as any other end of an instance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backend::observe::{Observed, SessionObserver, StatusCall};
use crate::backend::{Grant, GrantId, GrantStatus, LockSession, Request, StatusChange};

#[derive(Default)]
struct Held {
    since: HashMap<GrantId, Instant>,
    expired: bool,
}

#[derive(Default)]
struct Shared {
    held: Mutex<Held>,
    changed: Notify,
}

impl Shared {
    fn held(&self) -> MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Watches one instance's grants against a maximum hold time.
#[derive(Clone)]
pub struct Lease {
    max_hold: Duration,
    shared: Arc<Shared>,
}

impl Lease {
    /// Wraps `session` so that its grants are timed against `max_hold`.
    pub fn wrap(
        session: Box<dyn LockSession>,
        max_hold: Duration,
    ) -> (Box<dyn LockSession>, Lease) {
        let shared = Arc::new(Shared::default());
        let lease = Lease {
            max_hold,
            shared: shared.clone(),
        };
        (
            Box::new(Observed::new(session, LeaseObserver { shared })),
            lease,
        )
    }

    /// The bound.
    pub fn max_hold(&self) -> Duration {
        self.max_hold
    }

    /// Resolves when some grant has been held for longer than the bound; from
    /// then on every grant of the session reports [`GrantStatus::Lost`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes; dropping it changes nothing.
    pub async fn expired(&self) {
        loop {
            // Register for changes before reading, so a grant made in between
            // is not missed.
            let changed = self.shared.changed.notified();
            let oldest = {
                let held = self.shared.held();
                if held.expired {
                    return;
                }
                held.since.values().min().copied()
            };
            match oldest {
                None => changed.await,
                Some(since) => {
                    let deadline = since + self.max_hold;
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {
                            let mut held = self.shared.held();
                            if held.since.values().any(|s| *s + self.max_hold <= Instant::now()) {
                                held.expired = true;
                                drop(held);
                                // Subscribers to a grant's status learn it is lost.
                                self.shared.changed.notify_waiters();
                                return;
                            }
                        }
                        () = changed => {}
                    }
                }
            }
        }
    }
}

/// Watches one instance's grants for the lease.
struct LeaseObserver {
    shared: Arc<Shared>,
}

impl SessionObserver for LeaseObserver {
    fn granted(&self, _request: Request<'_>, grant: &Grant, _waited: Option<Duration>) {
        self.shared.held().since.insert(grant.id, Instant::now());
        self.shared.changed.notify_waiters();
    }

    fn downgraded(&self, exclusive: GrantId, shared: &Grant) {
        // The shared grant continues the exclusive hold: it inherits its start.
        let mut held = self.shared.held();
        let since = held
            .since
            .get(&exclusive)
            .copied()
            .unwrap_or_else(Instant::now);
        held.since.insert(shared.id, since);
        drop(held);
        self.shared.changed.notify_waiters();
    }

    fn released(&self, grant: GrantId) {
        self.shared.held().since.remove(&grant);
        self.shared.changed.notify_waiters();
    }

    fn status(&self, grant: GrantId, status: GrantStatus) -> GrantStatus {
        let held = self.shared.held();
        if held.expired && held.since.contains_key(&grant) {
            return GrantStatus::Lost;
        }
        status
    }

    fn status_changed(&self, call: StatusCall) -> StatusChange {
        let StatusCall { grant, seen, inner } = call;
        let shared = self.shared.clone();
        Box::pin(async move {
            let lease_ended = async {
                loop {
                    // Register before looking, so an expiry in between is seen.
                    let changed = shared.changed.notified();
                    {
                        let held = shared.held();
                        if held.expired && held.since.contains_key(&grant) {
                            return;
                        }
                    }
                    changed.await;
                }
            };
            tokio::select! {
                now = inner => now,
                () = lease_ended, if seen != GrantStatus::Lost => GrantStatus::Lost,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryBackend;
    use crate::backend::{LockBackend, Mode};
    use crate::name::LockName;

    const BOUND: Duration = Duration::from_millis(300);

    /// A session on a fresh memory backend, under a lease of [`BOUND`], holding
    /// lock `a`.
    async fn holding_on_lease() -> (Box<dyn LockSession>, Lease, Grant) {
        let backend = MemoryBackend::new();
        let (session, lease) = Lease::wrap(backend.open_session("t"), BOUND);
        let name = LockName::new("a").expect("valid name");
        let grant = session
            .acquire(&name, Mode::Exclusive, None)
            .await
            .expect("free");
        (session, lease, grant)
    }

    #[tokio::test]
    async fn expires_only_after_the_oldest_grant_outlives_the_bound() {
        let (session, lease, grant) = holding_on_lease().await;
        let started = Instant::now();
        let early = tokio::time::timeout(BOUND / 3, lease.expired()).await;
        assert!(early.is_err(), "expired before the bound");
        assert_eq!(session.status(grant.id), GrantStatus::Held);
        lease.expired().await;
        assert!(started.elapsed() >= BOUND - Duration::from_millis(5));
        assert_eq!(session.status(grant.id), GrantStatus::Lost);
    }

    #[tokio::test]
    async fn a_released_grant_never_expires() {
        let (session, lease, grant) = holding_on_lease().await;
        session.release(grant.id).expect("held");
        let expired = tokio::time::timeout(BOUND * 2, lease.expired()).await;
        assert!(expired.is_err(), "a released grant expired");
    }

    /// A semaphore permit goes through the lease like a lock (the wrapper
    /// forwards every kind of request), and is timed like one.
    #[tokio::test]
    async fn a_permit_is_leased_like_a_lock() {
        let backend = MemoryBackend::new();
        let (session, lease) = Lease::wrap(backend.open_session("t"), BOUND);
        let name = LockName::new("pool").expect("valid name");
        let permit = session
            .semaphores()
            .expect("semaphores")
            .acquire_permit(&name, 2, None)
            .await
            .expect("a permit through the lease");
        assert_eq!(session.status(permit.id), GrantStatus::Held);
        lease.expired().await;
        assert_eq!(session.status(permit.id), GrantStatus::Lost);
    }
}
