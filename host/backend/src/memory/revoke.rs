//! Revocation on the memory backend: a flag per held request, set by
//! [`Revocation::request_revocation`] on every holder of the name, and a
//! watch channel that wakes the holder's [`Revocation::revoked`] futures.
//!
//! [`Revocation::request_revocation`]: crate::Revocation::request_revocation
//! [`Revocation::revoked`]: crate::Revocation::revoked

use tokio::sync::watch;

use super::State;
use crate::name::LockName;
use crate::{Revoked, never_revoked};

impl State {
    /// Marks every holder of the lock `name` as asked to give it up; returns
    /// how many. A semaphore's permits are not lock holders: 0.
    pub(super) fn request_revocation(&mut self, name: &LockName) -> u32 {
        let Some(queue) = self.queues.get(name) else {
            return 0;
        };
        if queue.permits().is_some() {
            return 0;
        }
        let holders: Vec<u64> = queue
            .entries()
            .filter(|e| e.token.is_some())
            .map(|e| e.id)
            .collect();
        for id in &holders {
            self.revocations
                .entry(*id)
                .or_insert_with(|| watch::Sender::new(false))
                .send_replace(true);
        }
        u32::try_from(holders.len()).unwrap_or(u32::MAX)
    }

    /// Whether the holder of request `id` was asked to give it up.
    pub(super) fn revocation_requested(&self, id: u64) -> bool {
        self.revocations.get(&id).is_some_and(|flag| *flag.borrow())
    }

    /// Resolves once the holder of request `id` is asked to give it up.
    pub(super) fn revoked(&mut self, id: u64) -> Revoked {
        let mut flag = self
            .revocations
            .entry(id)
            .or_insert_with(|| watch::Sender::new(false))
            .subscribe();
        Box::pin(async move {
            if flag.wait_for(|asked| *asked).await.is_err() {
                // The grant ended unasked: nobody will ask any more.
                never_revoked().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::memory::MemoryBackend;
    use crate::name::LockName;
    use crate::{LockBackend, Mode};

    /// Long enough to fail a hang, never a synchronisation.
    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn a_request_reaches_every_holder_and_only_holders() {
        let backend = MemoryBackend::new();
        let name = LockName::new("revoked").expect("name");
        let (a, b, w) = (
            backend.open_session("a"),
            backend.open_session("b"),
            backend.open_session("w"),
        );
        let ra = a.acquire(&name, Mode::Shared, None).await.expect("a");
        let rb = b.acquire(&name, Mode::Shared, None).await.expect("b");
        let woken = a.revocation().expect("revocation").revoked(ra.id);
        let writer = tokio::spawn(async move {
            let grant = w.acquire(&name, Mode::Exclusive, Some(LIMIT)).await;
            (w, grant)
        });
        backend
            .wait_for(&LockName::new("revoked").expect("name"), |q| q.len() == 3)
            .await;
        assert!(
            !a.revocation()
                .expect("revocation")
                .revocation_requested(ra.id)
                .await
        );
        let asked = a
            .revocation()
            .expect("revocation")
            .request_revocation(&LockName::new("revoked").expect("name"))
            .await
            .expect("request");
        assert_eq!(asked, 2, "both readers, not the waiting writer");
        tokio::time::timeout(LIMIT, woken).await.expect("woken");
        assert!(
            a.revocation()
                .expect("revocation")
                .revocation_requested(ra.id)
                .await
        );
        assert!(
            b.revocation()
                .expect("revocation")
                .revocation_requested(rb.id)
                .await
        );
        a.release(ra.id).expect("release");
        b.release(rb.id).expect("release");
        assert!(
            !a.revocation()
                .expect("revocation")
                .revocation_requested(ra.id)
                .await,
            "released: no more"
        );
        let (w, grant) = writer.await.expect("writer task");
        let grant = grant.expect("writer granted");
        assert!(
            !w.revocation()
                .expect("revocation")
                .revocation_requested(grant.id)
                .await,
            "a later holder was not asked"
        );
        let nobody = LockName::new("nobody").expect("name");
        assert_eq!(
            w.revocation()
                .expect("revocation")
                .request_revocation(&nobody)
                .await,
            Ok(0)
        );
    }
}
