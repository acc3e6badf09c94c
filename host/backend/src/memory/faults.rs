//! Fault injection: what a lock service under trouble does to its holders,
//! on demand, so a test suite can check how its plugin reacts to `suspended`
//! and `lost` without a ZooKeeper to break.
//!
//! Faults apply to the sessions whose owner description starts with a given
//! prefix (the runner names a guest's session `<plugin>#<instance>`; an empty
//! prefix matches every session).

use std::time::Duration;

use super::MemoryBackend;

/// A fault to inject into sessions of a [`MemoryBackend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Their grants report `suspended` (contact interrupted, not expired yet);
    /// nobody else is granted their locks.
    Suspend,
    /// Their grants report `held` again after [`Fault::Suspend`].
    Resume,
    /// The session expires: every grant it holds now reports `lost` and is
    /// taken away, so the next waiter is granted. Its waits go on (they held
    /// nothing), as on ZooKeeper.
    Expire,
}

impl Fault {
    /// Parses `suspend`, `resume` or `expire`.
    pub fn parse(name: &str) -> Option<Fault> {
        match name {
            "suspend" => Some(Fault::Suspend),
            "resume" => Some(Fault::Resume),
            "expire" => Some(Fault::Expire),
            _ => None,
        }
    }
}

impl MemoryBackend {
    /// Injects `fault` into every session whose owner starts with
    /// `owner_prefix`; returns how many sessions it applied to.
    pub fn inject(&self, owner_prefix: &str, fault: Fault) -> usize {
        let applied = {
            let mut state = self.shared.lock();
            let sessions: Vec<u64> = state
                .owners
                .iter()
                .filter(|(_, owner)| owner.starts_with(owner_prefix))
                .map(|(id, _)| *id)
                .collect();
            for session in &sessions {
                match fault {
                    Fault::Suspend => {
                        state.suspended.insert(*session);
                        state.publish_session(*session);
                    }
                    Fault::Resume => {
                        state.suspended.remove(session);
                        state.publish_session(*session);
                    }
                    Fault::Expire => state.expire(*session),
                }
            }
            sessions.len()
        };
        self.shared.notify_changed();
        applied
    }

    /// Makes every later acquire reach the lock service `delay` late (zero:
    /// no delay), as a slow network would.
    pub fn delay_grants(&self, delay: Duration) {
        self.shared.lock().grant_delay = delay;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::LockName;
    use crate::{GrantStatus, LockBackend, Mode};

    #[tokio::test]
    async fn suspend_resume_and_expire_show_in_status_and_free_the_lock() {
        let backend = MemoryBackend::new();
        let name = LockName::new("faults").expect("name");
        let holder = backend.open_session("plugin#0");
        let other = backend.open_session("other#0");
        let grant = holder
            .acquire(&name, Mode::Exclusive, None)
            .await
            .expect("grant");
        assert_eq!(backend.inject("plugin#", Fault::Suspend), 1);
        assert_eq!(holder.status(grant.id), GrantStatus::Suspended);
        assert_eq!(
            other
                .try_acquire(&name, Mode::Exclusive)
                .await
                .expect("try"),
            None,
            "a suspended grant still holds the lock"
        );
        backend.inject("plugin#", Fault::Resume);
        assert_eq!(holder.status(grant.id), GrantStatus::Held);
        backend.inject("plugin#", Fault::Expire);
        assert_eq!(holder.status(grant.id), GrantStatus::Lost);
        let next = other
            .try_acquire(&name, Mode::Exclusive)
            .await
            .expect("try")
            .expect("the expired grant freed the lock");
        assert!(next.token > grant.token);
        // Releasing the lost grant leaves the new holder alone.
        holder.release(grant.id).expect("release");
        assert_eq!(other.status(next.id), GrantStatus::Held);
        assert_eq!(backend.snapshot(&name).len(), 1);
    }

    #[tokio::test]
    async fn delayed_grants_arrive_late() {
        let backend = MemoryBackend::new();
        let name = LockName::new("slow").expect("name");
        backend.delay_grants(Duration::from_millis(50));
        let session = backend.open_session("s");
        let started = tokio::time::Instant::now();
        session
            .acquire(&name, Mode::Exclusive, None)
            .await
            .expect("grant");
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
