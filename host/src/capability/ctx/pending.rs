//! Acquiring without blocking (WIT 0.2.0 `acquire-async`): the wait runs in a
//! task of its own, sharing the instance's lock session, while the guest runs
//! on; the `pending-lock` resource owns the task.

use std::time::Duration;

use tokio::sync::oneshot;
use tracing::Instrument;

use super::{Join, LockError, LockHandle, Mode, WardlockCtx};
use crate::capability::pending::{AbortOnDrop, Outcome, PendingLock, PendingState};

impl WardlockCtx {
    /// Starts acquiring `name` in `mode` (waiting at most `timeout`, counted
    /// from now) and returns at once. The pending acquisition counts against
    /// the handle cap until it is taken or dropped.
    ///
    /// # Errors
    /// What [`WardlockCtx::acquire`] reports before waiting: a bad or ungranted
    /// name, the handle cap, `WouldDeadlock`; `Unavailable` outside a tokio
    /// runtime. Errors of the wait itself come from [`WardlockCtx::take_pending`].
    ///
    /// # Cancellation safety
    /// Cancel safe: only a downgrade awaits here, and it records nothing
    /// until the backend answered.
    pub async fn acquire_async(
        &mut self,
        name: &str,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<PendingLock, LockError> {
        let name = self.admit(name)?;
        let state = match self.join_existing(&name, mode)? {
            Join::Handle(handle) => PendingState::Joined(handle),
            Join::Downgrade(record) => {
                PendingState::Joined(self.downgrade(name.clone(), record).await?)
            }
            Join::Acquire => {
                let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
                    LockError::InvalidRequest(
                        "acquire-async needs the store to run on a tokio runtime (the embedder's set-up)".into(),
                    )
                })?;
                let session = self.session.clone();
                let (deliver, outcome) = oneshot::channel::<Outcome>();
                let span = tracing::debug_span!("acquire_async", lock = %name, %mode);
                let wanted = name.clone();
                let waits = self.waits.clone();
                let task = runtime.spawn(
                    async move {
                        let result = waits
                            .bound(timeout, |timeout| session.acquire(&wanted, mode, timeout))
                            .await;
                        // Nobody will take a grant whose pending lock is gone.
                        if let Err(Ok(grant)) = deliver.send(result) {
                            let _ = session.release(grant.id);
                        }
                    }
                    .instrument(span),
                );
                self.live_handles += 1;
                PendingState::Waiting {
                    outcome,
                    task: AbortOnDrop(task),
                }
            }
        };
        Ok(PendingLock { name, mode, state })
    }

    /// The result of `pending`, once: `None` while it waits, then the handle
    /// or the error.
    ///
    /// # Errors
    /// Inside the `Some`: what [`WardlockCtx::acquire`] would have returned,
    /// and `InvalidRequest` when the result was taken already.
    pub fn take_pending(
        &mut self,
        pending: &mut PendingLock,
    ) -> Option<Result<LockHandle, LockError>> {
        if let PendingState::Waiting { outcome, .. } = &mut pending.state {
            let arrived = match outcome.try_recv() {
                Ok(arrived) => arrived,
                Err(oneshot::error::TryRecvError::Empty) => return None,
                Err(oneshot::error::TryRecvError::Closed) => {
                    Err(crate::backend::BackendError::Unavailable(
                        "the acquisition ended without an answer".into(),
                    ))
                }
            };
            pending.state = PendingState::Finished(arrived);
        }
        match std::mem::replace(&mut pending.state, PendingState::Taken) {
            PendingState::Waiting { .. } => None,
            PendingState::Joined(handle) => Some(Ok(handle)),
            PendingState::Finished(outcome) => {
                // The pending slot becomes the handle's (or goes).
                self.live_handles = self.live_handles.saturating_sub(1);
                Some(match outcome {
                    Ok(grant) => Ok(self.record(pending.name.clone(), pending.mode, grant)),
                    Err(error) => Err(error.into()),
                })
            }
            PendingState::Taken => Some(Err(LockError::InvalidRequest(
                "the result of this pending lock was taken already".into(),
            ))),
        }
    }

    /// Forgets a pending lock the guest dropped: withdraws its wait, or
    /// releases what it was granted and nobody took.
    pub fn drop_pending(&mut self, pending: PendingLock) {
        match pending.state {
            PendingState::Waiting { mut outcome, task } => {
                drop(task);
                // After `close`, the task can no longer deliver (it releases a
                // late grant itself); what it delivered before is here.
                outcome.close();
                if let Ok(Ok(grant)) = outcome.try_recv() {
                    let _ = self.session.release(grant.id);
                }
                self.live_handles = self.live_handles.saturating_sub(1);
            }
            PendingState::Finished(outcome) => {
                if let Ok(grant) = outcome {
                    let _ = self.session.release(grant.id);
                }
                self.live_handles = self.live_handles.saturating_sub(1);
            }
            PendingState::Joined(handle) => self.drop_handle(handle),
            PendingState::Taken => {}
        }
    }
}
