//! Grant status watchers: what [`LockSession::status_changed`] awaits on the
//! memory backend.
//!
//! A watcher is made for a grant the first time someone subscribes to it, and
//! told its new status by every change that can move it: an injected fault
//! (suspend, resume, expire) and the grant's release. Nothing polls.
//!
//! [`LockSession::status_changed`]: crate::LockSession::status_changed

use tokio::sync::watch;

use super::State;
use crate::GrantStatus;

/// The status channel of one subscribed grant.
pub(super) struct Watcher {
    /// The session holding the grant (faults apply per session).
    session: u64,
    status: watch::Sender<GrantStatus>,
}

impl State {
    /// What grant `id` of `session` guarantees, given that the session holds it.
    pub(super) fn held_status(&self, session: u64, id: u64) -> GrantStatus {
        if self.lost.contains(&id) {
            GrantStatus::Lost
        } else if self.suspended.contains(&session) {
            GrantStatus::Suspended
        } else {
            GrantStatus::Held
        }
    }

    /// A receiver of the status of grant `id`, held by `session`.
    pub(super) fn watch_grant(&mut self, session: u64, id: u64) -> watch::Receiver<GrantStatus> {
        let now = self.held_status(session, id);
        self.watchers
            .entry(id)
            .or_insert_with(|| Watcher {
                session,
                status: watch::Sender::new(now),
            })
            .status
            .subscribe()
    }

    /// Tells the watchers of `session`'s grants what they guarantee now.
    pub(super) fn publish_session(&self, session: u64) {
        for (id, watcher) in &self.watchers {
            if watcher.session == session {
                let now = self.held_status(session, *id);
                watcher.status.send_if_modified(|status| {
                    let changed = *status != now;
                    *status = now;
                    changed
                });
            }
        }
    }

    /// Grant `id` ended: its watchers see `released`, and it is forgotten.
    /// Its revocation flag goes too (a lost grant's outlives its queue entry).
    pub(super) fn publish_released(&mut self, id: u64) {
        self.revocations.remove(&id);
        if let Some(watcher) = self.watchers.remove(&id) {
            watcher.status.send_replace(GrantStatus::Released);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::memory::{Fault, MemoryBackend};
    use crate::name::LockName;
    use crate::{GrantStatus, LockBackend, Mode};

    /// Long enough to fail a hang, never a synchronisation.
    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn faults_and_release_wake_subscribers_with_the_new_status() {
        let backend = MemoryBackend::new();
        let name = LockName::new("watched").expect("name");
        let session = backend.open_session("plugin#1");
        let grant = session
            .acquire(&name, Mode::Exclusive, None)
            .await
            .expect("grant");
        let suspended = session.status_changed(grant.id, GrantStatus::Held);
        backend.inject("plugin#", Fault::Suspend);
        let now = tokio::time::timeout(LIMIT, suspended).await.expect("woken");
        assert_eq!(now, GrantStatus::Suspended);
        let resumed = session.status_changed(grant.id, GrantStatus::Suspended);
        backend.inject("plugin#", Fault::Resume);
        assert_eq!(
            tokio::time::timeout(LIMIT, resumed).await.expect("woken"),
            GrantStatus::Held
        );
        let lost = session.status_changed(grant.id, GrantStatus::Held);
        backend.inject("plugin#", Fault::Expire);
        assert_eq!(
            tokio::time::timeout(LIMIT, lost).await.expect("woken"),
            GrantStatus::Lost
        );
        let released = session.status_changed(grant.id, GrantStatus::Lost);
        session.release(grant.id).expect("release");
        assert_eq!(
            tokio::time::timeout(LIMIT, released).await.expect("woken"),
            GrantStatus::Released
        );
        // Already different: resolves at once.
        assert_eq!(
            session.status_changed(grant.id, GrantStatus::Held).await,
            GrantStatus::Released
        );
    }

    #[tokio::test]
    async fn a_subscriber_is_not_woken_by_other_sessions_or_locks() {
        let backend = MemoryBackend::new();
        let session = backend.open_session("mine#1");
        let other = backend.open_session("other#1");
        let a = LockName::new("a").expect("name");
        let b = LockName::new("b").expect("name");
        let grant = session.acquire(&a, Mode::Exclusive, None).await.expect("a");
        let mut change = session.status_changed(grant.id, GrantStatus::Held);
        let theirs = other.acquire(&b, Mode::Exclusive, None).await.expect("b");
        backend.inject("other#", Fault::Expire);
        other.release(theirs.id).expect("release");
        let early = futures_poll_once(&mut change);
        assert_eq!(early, None, "nothing happened to this grant");
        drop(session);
        assert_eq!(
            tokio::time::timeout(LIMIT, change).await.expect("woken"),
            GrantStatus::Released,
            "dropping the session releases its grants"
        );
    }

    /// Polls `future` once, without waiting.
    fn futures_poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        match std::pin::Pin::new(future).poll(&mut cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        }
    }
}
