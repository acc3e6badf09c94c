//! The host-side state behind a guest's `pending-lock` resource (WIT 0.2.0):
//! an acquisition waiting in a task of its own while the guest runs on.
//!
//! A [`PendingLock`] cleans up after itself when dropped, wherever that
//! happens (its resource's destructor, or the table dropped with the
//! Store): it withdraws the wait, releases a grant nobody will take, and
//! gives its slot under the handle cap back ([`WaitSlot`], which WIT
//! 0.3.0's waiting calls take too: they hold their wait in the call's own
//! future instead, `ctx/detached.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::oneshot;

use super::handle::LockHandle;
use crate::backend::{BackendError, Grant, LockSession, Mode};
use crate::name::LockName;

/// What the waiting task delivers.
pub(crate) type Outcome = Result<Grant, BackendError>;

/// One acquisition still waiting (or finished and not yet taken): an
/// acquisition started by [`super::WardlockCtx::acquire_async`], finished by
/// [`super::WardlockCtx::take_pending`] or withdrawn by dropping it
/// ([`super::WardlockCtx::drop_pending`] for a 0.2.0 `pending-lock`).
pub struct PendingLock {
    pub(crate) name: LockName,
    pub(crate) mode: Mode,
    pub(crate) state: PendingState,
    /// Where a grant nobody will take is released.
    pub(crate) session: Arc<dyn LockSession>,
}

#[derive(Debug)]
pub(crate) enum PendingState {
    /// Waiting in the backend, in `task`; the outcome arrives on `outcome`.
    Waiting {
        outcome: oneshot::Receiver<Outcome>,
        task: AbortOnDrop,
        slot: WaitSlot,
    },
    /// The task finished; the outcome is not taken yet.
    Finished(Outcome, WaitSlot),
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

/// One place under a count of the instance's, given back when dropped (the
/// count is shared, so a pending `acquire` cancelled far from the instance's
/// state still gives its slot back): an acquisition not yet turned into a
/// handle or an open `observe` stream (under the handle cap), or an open
/// `not-held` or `revoked` future (under the bound on open futures).
#[derive(Debug)]
pub(crate) struct WaitSlot(Arc<AtomicUsize>);

impl WaitSlot {
    /// Counts one more acquisition in `waiting`.
    pub(crate) fn take(waiting: &Arc<AtomicUsize>) -> Self {
        waiting.fetch_add(1, Ordering::SeqCst);
        WaitSlot(waiting.clone())
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
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
            if let PendingState::Waiting { slot, .. } =
                std::mem::replace(&mut self.state, PendingState::Taken)
            {
                self.state = PendingState::Finished(finished, slot);
            }
        }
    }
}

impl Drop for PendingLock {
    /// Withdraws a wait, or releases a grant that arrived and was not taken.
    /// (A handle served from what the instance held, `Joined`, goes back
    /// through [`super::WardlockCtx::drop_pending`]; one dropped here stays
    /// counted until the instance ends.)
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, PendingState::Taken) {
            PendingState::Waiting {
                mut outcome, task, ..
            } => {
                drop(task);
                // After `close`, the task can no longer deliver (it releases a
                // late grant itself); what it delivered before is here.
                outcome.close();
                if let Ok(Ok(grant)) = outcome.try_recv() {
                    let _ = self.session.release(grant.id);
                }
            }
            PendingState::Finished(Ok(grant), _) => {
                let _ = self.session.release(grant.id);
            }
            PendingState::Finished(Err(_), _) | PendingState::Joined(_) | PendingState::Taken => {}
        }
    }
}

impl std::fmt::Debug for PendingLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLock")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("state", &self.state)
            .finish_non_exhaustive()
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
