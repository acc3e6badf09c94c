//! `wardlock:lock@0.3.0`'s `acquire-many`: several locks, all or nothing,
//! taken one by one in a canonical order within one deadline (0.2.0's
//! semantics), as a concurrent call.
//!
//! The locks are recorded on the instance's state as they are granted, and
//! a call cancelled half-way must release them, which needs the state. A
//! host future cancelled by its guest is simply dropped, with no access to
//! it. So the work runs in a task of the store ([`Accessor::spawn`]), which
//! keeps its access whatever becomes of the call: it stops waiting and
//! releases what it took when the call is gone, and it releases the whole
//! set when the call went before it could take it. The call waits for the
//! task and takes the set off it in one step on the state.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use wasmtime::component::{Accessor, AccessorTask};

use crate::backend::Mode;
use crate::capability::HasWardlock;
use crate::capability::ctx::{Begun, Planned};
use crate::capability::error::LockError;
use crate::capability::handle::LockHandle;

/// What the task hands the call: the handles in the order of the request,
/// or the error that stopped it.
type Taken = Result<Vec<LockHandle>, LockError>;

/// Where the task leaves its result for the call to take.
pub(super) type Slot = Arc<Mutex<Option<Taken>>>;

/// The task of one `acquire-many` call.
pub(super) struct ManyTask {
    pub(super) requests: Vec<(String, Mode)>,
    pub(super) timeout: Option<Duration>,
    /// Where the result goes.
    pub(super) slot: Slot,
    /// Told once the result is in the slot.
    pub(super) done: oneshot::Sender<()>,
    /// Closed (its receiver dropped) when the call ends, taken its result
    /// or not; nothing is ever sent on it.
    pub(super) call: oneshot::Sender<()>,
}

impl<T: 'static> AccessorTask<T, HasWardlock> for ManyTask {
    async fn run(mut self, store: &Accessor<T, HasWardlock>) -> wasmtime::Result<()> {
        let taken = take_all(store, &self.requests, self.timeout, &mut self.call).await;
        *lock(&self.slot) = Some(taken);
        let _ = self.done.send(());
        // The call takes the result off the slot, then ends; a call that
        // ended first (cancelled) left it there: release it.
        self.call.closed().await;
        if let Some(Ok(handles)) = lock(&self.slot).take() {
            release(store, handles);
        }
        Ok(())
    }
}

/// The slot, whatever a panicking holder left in it.
pub(super) fn lock(slot: &Slot) -> std::sync::MutexGuard<'_, Option<Taken>> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every lock of `requests`, or none.
async fn take_all<T>(
    store: &Accessor<T, HasWardlock>,
    requests: &[(String, Mode)],
    timeout: Option<Duration>,
    call: &mut oneshot::Sender<()>,
) -> Taken {
    let (plan, deadline) = store.with(|mut access| {
        let ctx = &mut access.get().ctx;
        ctx.plan_many(requests)
            .map(|plan| (plan, ctx.many_deadline(timeout)))
    })?;
    let mut taken: Vec<(usize, LockHandle)> = Vec::with_capacity(plan.len());
    for planned in plan {
        let left = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        match take_one(store, &planned, left, call).await {
            Ok(handle) => taken.push((planned.index, handle)),
            Err(error) => {
                release(store, taken.into_iter().map(|(_, handle)| handle).collect());
                return Err(error);
            }
        }
    }
    taken.sort_by_key(|(index, _)| *index);
    Ok(taken.into_iter().map(|(_, handle)| handle).collect())
}

/// One lock of the set, as `acquire` takes it; a wait ends early when the
/// call is gone.
async fn take_one<T>(
    store: &Accessor<T, HasWardlock>,
    planned: &Planned,
    left: Option<Duration>,
    call: &mut oneshot::Sender<()>,
) -> Result<LockHandle, LockError> {
    let begun = store.with(|mut access| {
        access
            .get()
            .ctx
            .begin_acquire(planned.name.as_str(), planned.mode, left)
    })?;
    match begun {
        Begun::Joined(handle) => Ok(handle),
        Begun::Downgrade(downgrade) => {
            let answer = downgrade.run().await;
            store.with(|mut access| access.get().ctx.finish_downgrade(downgrade, answer))
        }
        Begun::Queue(wait, slot) => {
            let answer = tokio::select! {
                answer = wait.run() => Some(answer),
                () = call.closed() => None,
            };
            match answer {
                Some(answer) => {
                    store.with(|mut access| access.get().ctx.finish_acquire(wait, slot, answer))
                }
                // Nobody is left to take the set: the wait is dropped
                // (withdrawn), and the caller releases what was taken.
                None => Err(LockError::InvalidRequest("the call was cancelled".into())),
            }
        }
    }
}

/// Releases `handles` as if the guest had dropped them.
fn release<T>(store: &Accessor<T, HasWardlock>, handles: Vec<LockHandle>) {
    store.with(|mut access| {
        let ctx = &mut access.get().ctx;
        for handle in handles {
            ctx.drop_handle(handle);
        }
    });
}
