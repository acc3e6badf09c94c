//! Acquiring without blocking (WIT 0.2.0 `acquire-async`): the wait runs in
//! a task of its own, sharing the instance's lock session, while the guest
//! runs on; the `pending-lock` resource owns the task. The start of every
//! acquisition, [`WardlockCtx::begin_acquire`], is here too: WIT 0.3.0's
//! `acquire` starts the same way and awaits the wait in its call's future.

use std::time::Duration;

use tokio::sync::oneshot;
use tracing::Instrument;

use super::detached::{AcquireCall, DowngradeCall};
use super::{Join, LockError, LockHandle, Mode, WardlockCtx};
use crate::backend::BackendError;
use crate::capability::pending::{AbortOnDrop, Outcome, PendingLock, PendingState, WaitSlot};

/// How an acquisition stands once started on the instance's state
/// ([`WardlockCtx::begin_acquire`]).
pub(crate) enum Begun {
    /// Served at once from what the instance holds (re-entrancy).
    Joined(LockHandle),
    /// Shared while holding the name exclusively: the backend downgrades
    /// (run the call, then [`WardlockCtx::finish_downgrade`]).
    Downgrade(DowngradeCall),
    /// A wait in the lock's queue (run the call, then
    /// [`WardlockCtx::finish_acquire`]); the slot counts it against the
    /// handle cap meanwhile.
    Queue(AcquireCall, WaitSlot),
}

impl WardlockCtx {
    /// Starts acquiring `name` in `mode` (waiting at most `timeout`, counted
    /// from the wait's start) on the instance's state, without waiting:
    /// served from what the instance holds, a downgrade to ask for, or a
    /// wait to make.
    ///
    /// # Errors
    /// What [`WardlockCtx::acquire`] reports before waiting: a bad or ungranted
    /// name, the handle cap, `WouldDeadlock`.
    pub(crate) fn begin_acquire(
        &mut self,
        name: &str,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<Begun, LockError> {
        let name = self.admit(name)?;
        Ok(match self.join_existing(&name, mode)? {
            Join::Handle(handle) => Begun::Joined(handle),
            Join::Downgrade(exclusive) => Begun::Downgrade(self.downgrade_call(name, exclusive)?),
            Join::Acquire => {
                let (call, slot) = self.acquire_call(name, mode, timeout);
                Begun::Queue(call, slot)
            }
        })
    }

    /// Runs `call` in a task of its own: the wait of a `pending-lock`.
    ///
    /// # Errors
    /// `InvalidRequest` outside a tokio runtime.
    fn spawn_wait(call: AcquireCall, slot: WaitSlot) -> Result<PendingLock, LockError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LockError::InvalidRequest(
                "acquire-async needs the store to run on a tokio runtime (the embedder's set-up)"
                    .into(),
            )
        })?;
        let session = call.session().clone();
        let (name, mode) = (call.name.clone(), call.mode);
        let (deliver, outcome) = oneshot::channel::<Outcome>();
        let span = tracing::debug_span!("acquire_async", lock = %name, %mode);
        let task = runtime.spawn(
            async move {
                let result = call.run().await;
                // Nobody will take a grant whose pending lock is gone.
                if let Err(Ok(grant)) = deliver.send(result) {
                    let _ = call.session().release(grant.id);
                }
            }
            .instrument(span),
        );
        Ok(PendingLock {
            name,
            mode,
            state: PendingState::Waiting {
                outcome,
                task: AbortOnDrop(task),
                slot,
            },
            session,
        })
    }

    /// Starts acquiring `name` in `mode` (waiting at most `timeout`, counted
    /// from now) and returns at once. The pending acquisition counts against
    /// the handle cap until it is taken or dropped.
    ///
    /// # Errors
    /// What [`WardlockCtx::acquire`] reports before waiting: a bad or ungranted
    /// name, the handle cap, `WouldDeadlock`; `InvalidRequest` outside a tokio
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
        let served = match self.begin_acquire(name, mode, timeout)? {
            Begun::Queue(call, slot) => return Self::spawn_wait(call, slot),
            Begun::Joined(handle) => handle,
            Begun::Downgrade(call) => {
                let answer = call.run().await;
                self.finish_downgrade(call, answer)?
            }
        };
        Ok(PendingLock {
            name: served.name.clone(),
            mode,
            state: PendingState::Joined(served),
            session: self.session.clone(),
        })
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
                Err(oneshot::error::TryRecvError::Closed) => Err(BackendError::Unavailable(
                    "the acquisition ended without an answer".into(),
                )),
            };
            if let PendingState::Waiting { slot, .. } =
                std::mem::replace(&mut pending.state, PendingState::Taken)
            {
                pending.state = PendingState::Finished(arrived, slot);
            }
        }
        match std::mem::replace(&mut pending.state, PendingState::Taken) {
            PendingState::Waiting { .. } => None,
            PendingState::Joined(handle) => Some(Ok(handle)),
            // The wait's slot goes here; the handle counts from `record` on.
            PendingState::Finished(outcome, _slot) => Some(match outcome {
                Ok(grant) => Ok(self.record(pending.name.clone(), pending.mode, grant)),
                Err(error) => Err(error.into()),
            }),
            PendingState::Taken => Some(Err(LockError::InvalidRequest(
                "the result of this pending lock was taken already".into(),
            ))),
        }
    }

    /// Forgets a pending lock the guest dropped: withdraws its wait, or
    /// releases what it was granted and nobody took (the pending lock's own
    /// drop), or drops the handle it was served from what the instance held.
    pub fn drop_pending(&mut self, mut pending: PendingLock) {
        if matches!(pending.state, PendingState::Joined(_))
            && let PendingState::Joined(handle) =
                std::mem::replace(&mut pending.state, PendingState::Taken)
        {
            self.drop_handle(handle);
        }
    }
}
