//! Bounds an embedder puts on one instance's waits: a longest wait, and an
//! interrupt another thread can raise.
//!
//! A synchronous host cannot drop the future of a blocked host call, and
//! epoch interruption does not reach into host code: without these a plugin
//! that waits for a lock held elsewhere blocks its thread until the lock is
//! granted. Every wait of a [`WardlockCtx`](super::WardlockCtx) (`acquire`,
//! `acquire-many`, `acquire-permit`, `acquire-async`) goes through
//! [`WaitBounds::bound`]; an ended wait is withdrawn from the backend's queue
//! (its acquisition is cancel safe), so nothing stays queued.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::backend::BackendError;

/// Ends the waits of one instance from any thread: every wait in progress
/// returns `timeout` at once, and so does every later one, until
/// [`WaitInterrupt::clear`].
///
/// Cheap to clone; all clones interrupt the same instance. Get one with
/// [`WardlockCtx::interrupt_handle`](super::WardlockCtx::interrupt_handle)
/// before the Store moves into the thread that runs the plugin.
#[derive(Clone, Debug, Default)]
pub struct WaitInterrupt {
    state: Arc<InterruptState>,
}

#[derive(Debug, Default)]
struct InterruptState {
    raised: AtomicBool,
    wake: Notify,
}

impl WaitInterrupt {
    /// Ends the instance's waits now and refuses its later ones (with
    /// `timeout`), so a plugin looping on `acquire` cannot block again. Pair
    /// it with wasmtime's epoch interruption to stop the plugin's own code.
    pub fn interrupt(&self) {
        self.state.raised.store(true, Ordering::SeqCst);
        self.state.wake.notify_waiters();
    }

    /// Lets the instance wait again.
    pub fn clear(&self) {
        self.state.raised.store(false, Ordering::SeqCst);
    }

    /// Whether [`WaitInterrupt::interrupt`] was called (and not cleared).
    pub fn is_interrupted(&self) -> bool {
        self.state.raised.load(Ordering::SeqCst)
    }

    /// Resolves once the interrupt is raised.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only watches.
    async fn raised(&self) {
        loop {
            let woken = self.state.wake.notified();
            tokio::pin!(woken);
            // Registered before the check, so an interrupt between the two
            // still wakes this waiter.
            woken.as_mut().enable();
            if self.is_interrupted() {
                return;
            }
            woken.await;
        }
    }
}

/// The embedder's bounds on one instance's waits.
#[derive(Clone, Debug, Default)]
pub(crate) struct WaitBounds {
    /// The longest any single wait may last, whatever timeout the guest asked.
    pub(crate) limit: Option<Duration>,
    pub(crate) interrupt: WaitInterrupt,
}

impl WaitBounds {
    /// The guest's `timeout`, shortened to the embedder's limit.
    pub(crate) fn cap(&self, timeout: Option<Duration>) -> Option<Duration> {
        match (timeout, self.limit) {
            (Some(asked), Some(limit)) => Some(asked.min(limit)),
            (asked, limit) => asked.or(limit),
        }
    }

    /// Runs `wait` with the capped timeout, ending it with
    /// [`BackendError::Timeout`] if the interrupt is (or gets) raised.
    ///
    /// # Errors
    /// What `wait` returns; `Timeout` when interrupted.
    ///
    /// # Cancellation safety
    /// As cancel safe as `wait`: an interrupt drops `wait` the same way.
    pub(crate) async fn bound<T, F>(
        &self,
        timeout: Option<Duration>,
        wait: impl FnOnce(Option<Duration>) -> F,
    ) -> Result<T, BackendError>
    where
        F: Future<Output = Result<T, BackendError>>,
    {
        if self.interrupt.is_interrupted() {
            return Err(BackendError::Timeout);
        }
        let wait = wait(self.cap(timeout));
        tokio::select! {
            biased;
            () = self.interrupt.raised() => Err(BackendError::Timeout),
            result = wait => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_shortens_longer_waits_and_bounds_endless_ones() {
        let bounds = WaitBounds {
            limit: Some(Duration::from_millis(300)),
            ..WaitBounds::default()
        };
        assert_eq!(bounds.cap(None), Some(Duration::from_millis(300)));
        assert_eq!(
            bounds.cap(Some(Duration::from_secs(5))),
            Some(Duration::from_millis(300))
        );
        assert_eq!(
            bounds.cap(Some(Duration::from_millis(10))),
            Some(Duration::from_millis(10))
        );
        assert_eq!(WaitBounds::default().cap(None), None);
    }

    #[tokio::test]
    async fn an_interrupt_ends_a_wait_in_progress_and_refuses_later_ones() {
        let bounds = WaitBounds::default();
        let interrupt = bounds.interrupt.clone();
        let waiting = tokio::spawn(async move {
            bounds
                .bound(None, |_| std::future::pending::<Result<(), BackendError>>())
                .await
        });
        tokio::task::yield_now().await;
        interrupt.interrupt();
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert!(matches!(ended, Ok(Ok(Err(BackendError::Timeout)))));

        let again = WaitBounds {
            limit: None,
            interrupt: interrupt.clone(),
        };
        let refused = again
            .bound(None, |_| async { Ok::<_, BackendError>(()) })
            .await;
        assert_eq!(refused, Err(BackendError::Timeout));
        interrupt.clear();
        let served = again
            .bound(None, |_| async { Ok::<_, BackendError>(()) })
            .await;
        assert_eq!(served, Ok(()));
    }
}
