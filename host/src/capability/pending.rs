//! The host-side state behind a guest's `pending-lock` resource (WIT 0.2.0):
//! an acquisition waiting in a task of its own while the guest runs on.

use tokio::sync::oneshot;

use super::handle::LockHandle;
use crate::backend::{BackendError, Grant, Mode};
use crate::name::LockName;

/// What the waiting task delivers.
pub(crate) type Outcome = Result<Grant, BackendError>;

/// One `pending-lock` of a guest instance: an acquisition started by
/// [`super::WardlockCtx::acquire_async`], finished by
/// [`super::WardlockCtx::take_pending`] or withdrawn by
/// [`super::WardlockCtx::drop_pending`].
#[derive(Debug)]
pub struct PendingLock {
    pub(crate) name: LockName,
    pub(crate) mode: Mode,
    pub(crate) state: PendingState,
}

#[derive(Debug)]
pub(crate) enum PendingState {
    /// Waiting in the backend, in `task`; the outcome arrives on `outcome`.
    Waiting {
        outcome: oneshot::Receiver<Outcome>,
        task: AbortOnDrop,
    },
    /// The task finished; the outcome is not taken yet.
    Finished(Outcome),
    /// Served at once from what the instance held (re-entrancy, downgrade).
    Joined(LockHandle),
    /// `get` returned the result already.
    Taken,
}

/// Aborts the waiting task when dropped: dropping its `acquire` future
/// withdraws the wait (backend acquires are cancel safe).
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl PendingLock {
    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The mode requested.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// True once the acquisition finished (its result may have been taken).
    pub fn is_finished(&self) -> bool {
        !matches!(self.state, PendingState::Waiting { .. })
    }

    /// Resolves once the acquisition finished, granted or not.
    ///
    /// # Errors
    /// None: the outcome, error or not, is kept for
    /// [`super::WardlockCtx::take_pending`].
    ///
    /// # Cancellation safety
    /// Cancel safe: the outcome is kept in the pending lock once it arrives.
    pub async fn until_finished(&mut self) {
        if let PendingState::Waiting { outcome, .. } = &mut self.state {
            let finished = outcome.await.unwrap_or_else(|_| {
                Err(BackendError::Unavailable(
                    "the acquisition ended without an answer".into(),
                ))
            });
            self.state = PendingState::Finished(finished);
        }
    }
}

/// `pending-lock.subscribe`'s pollable (`wasi:io/poll`): ready once the
/// acquisition finished.
#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for PendingLock {
    async fn ready(&mut self) {
        self.until_finished().await;
    }
}
