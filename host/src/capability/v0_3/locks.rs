//! `wardlock:lock@0.3.0`'s `locks` and `types` interfaces: the waiting calls
//! as concurrent host functions on [`HasWardlock`], the `lock` and `permit`
//! resources' plain methods on [`WardlockView`] (0.2.2's, through
//! `lock_calls.rs` and the context's permit calls).
//!
//! A concurrent call never holds the instance's state while it waits: it
//! starts on the state (`Accessor::with`), waits away from it, and comes
//! back to record what it got. Dropping the call's future (the guest
//! cancelled it, or the instance ended) drops the backend's wait, which
//! withdraws it (backend acquires are cancel safe).

use std::time::Duration;

use wasmtime::component::{Access, Accessor, FutureReader, Resource};

use crate::backend::GrantStatus;
use crate::capability::bindings_v3::wardlock::lock::{locks, types};
use crate::capability::ctx::{Begun, NotHeld, TryBegun};
use crate::capability::error::LockError;
use crate::capability::handle::LockHandle;
use crate::capability::pending::WaitSlot;
use crate::capability::permit::PermitHandle;
use crate::capability::{HasWardlock, WardlockView};

use super::many::{self, ManyTask, Slot};
use tokio::sync::oneshot;

impl types::Host for WardlockView<'_> {}

impl locks::Host for WardlockView<'_> {}

/// A finished call's handle (a lock or a permit), put in the instance's
/// table; or its error.
pub(super) fn handed_over<U, H: Send + 'static>(
    store: &Accessor<U, HasWardlock>,
    result: Result<H, LockError>,
) -> wasmtime::Result<Result<Resource<H>, types::Error>> {
    match result {
        Ok(handle) => store.with(|mut access| Ok(Ok(access.get().table.push(handle)?))),
        Err(error) => Ok(Err(error.into())),
    }
}

/// A finished call's optional handle, as [`handed_over`].
fn maybe_handed_over<U, H: Send + 'static>(
    store: &Accessor<U, HasWardlock>,
    result: Result<Option<H>, LockError>,
) -> wasmtime::Result<Result<Option<Resource<H>>, types::Error>> {
    match result {
        Ok(Some(handle)) => Ok(handed_over(store, Ok(handle))?.map(Some)),
        Ok(None) => Ok(Ok(None)),
        Err(error) => Ok(Err(error.into())),
    }
}

/// `not-held`'s `future<status>`, completed by `not_held`; it keeps `slot`
/// (under the instance's bound on open futures) while it lives.
pub(super) fn status_future<U>(
    mut store: Access<'_, U, HasWardlock>,
    (not_held, slot): (NotHeld, WaitSlot),
) -> wasmtime::Result<FutureReader<types::Status>> {
    FutureReader::new(&mut store, async move {
        let _slot = slot;
        let status: GrantStatus = not_held.await;
        wasmtime::Result::<types::Status>::Ok(status.into())
    })
}

/// A slot for one more open future, or the trap that ends a guest that
/// keeps more open than its bound (a `future` cannot carry an error).
pub(super) fn future_slot(view: &WardlockView<'_>) -> wasmtime::Result<WaitSlot> {
    view.ctx
        .future_slot()
        .map_err(|error| wasmtime::Error::msg(error.to_string()))
}

impl<U> locks::HostWithStore<U> for HasWardlock {
    async fn acquire(
        store: &Accessor<U, Self>,
        name: String,
        options: locks::Options,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, types::Error>> {
        let timeout = options.timeout_ms.map(Duration::from_millis);
        let mode = options.mode.into();
        let begun = store.with(|mut access| access.get().ctx.begin_acquire(&name, mode, timeout));
        let result = match begun {
            Err(error) => Err(error),
            Ok(Begun::Joined(handle)) => Ok(handle),
            Ok(Begun::Downgrade(call)) => {
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_downgrade(call, answer))
            }
            Ok(Begun::Queue(call, slot)) => {
                // Cancelled here, the backend's wait is dropped: withdrawn
                // at once, as the guest's cancel returns.
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_acquire(call, slot, answer))
            }
        };
        handed_over(store, result)
    }

    async fn try_acquire(
        store: &Accessor<U, Self>,
        name: String,
        mode: types::Mode,
    ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, types::Error>> {
        let begun = store.with(|mut access| access.get().ctx.begin_try_acquire(&name, mode.into()));
        let result = match begun {
            Err(error) => Err(error),
            Ok(TryBegun::Joined(handle)) => Ok(Some(handle)),
            Ok(TryBegun::Downgrade(call)) => {
                let answer = call.run().await;
                store
                    .with(|mut access| access.get().ctx.finish_downgrade(call, answer))
                    .map(Some)
            }
            Ok(TryBegun::Ask(call)) => {
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_try_acquire(call, answer))
            }
        };
        maybe_handed_over(store, result)
    }

    async fn acquire_permit(
        store: &Accessor<U, Self>,
        name: String,
        permits: u32,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<PermitHandle>, types::Error>> {
        let timeout = timeout_ms.map(Duration::from_millis);
        let begun = store.with(|mut access| access.get().ctx.begin_permit(&name, permits, timeout));
        let result = match begun {
            Err(error) => Err(error),
            Ok((call, slot)) => {
                // Cancelled here, the backend's wait is dropped: withdrawn.
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_permit(call, slot, answer))
            }
        };
        handed_over(store, result)
    }

    async fn try_acquire_permit(
        store: &Accessor<U, Self>,
        name: String,
        permits: u32,
    ) -> wasmtime::Result<Result<Option<Resource<PermitHandle>>, types::Error>> {
        let begun = store.with(|mut access| access.get().ctx.begin_try_permit(&name, permits));
        let result = match begun {
            Err(error) => Err(error),
            Ok(call) => {
                let answer = call.run().await;
                store.with(|mut access| access.get().ctx.finish_try_permit(call, answer))
            }
        };
        maybe_handed_over(store, result)
    }

    async fn acquire_many(
        store: &Accessor<U, Self>,
        requests: Vec<locks::Request>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<Resource<LockHandle>>, types::Error>> {
        let (slot, (done, finished), (watched, call)) = (
            Slot::default(),
            oneshot::channel(),
            oneshot::channel::<()>(),
        );
        store.spawn(ManyTask {
            requests: requests
                .into_iter()
                .map(|r| (r.name, r.mode.into()))
                .collect(),
            timeout: timeout_ms.map(Duration::from_millis),
            slot: slot.clone(),
            done,
            call: watched,
        })?;
        // Cancelled here or before the set is taken below, `call` goes and
        // the task releases the set.
        let _ = finished.await;
        let pushed = store.with(|mut access| {
            let mut view = access.get();
            match many::lock(&slot).take() {
                Some(Ok(handles)) => {
                    let mut pushed = Vec::with_capacity(handles.len());
                    for handle in handles {
                        pushed.push(view.push(handle)?);
                    }
                    wasmtime::Result::Ok(Ok(pushed))
                }
                Some(Err(error)) => Ok(Err(error.into())),
                None => Ok(Err(types::Error::Unavailable(
                    "acquire-many ended without an answer".into(),
                ))),
            }
        });
        drop(call);
        pushed
    }

    async fn request_revocation(
        store: &Accessor<U, Self>,
        name: String,
    ) -> wasmtime::Result<Result<u32, types::Error>> {
        let call = store.with(|mut access| access.get().ctx.revocation_call(&name));
        Ok(match call {
            Ok(call) => call.run().await.map_err(types::Error::from),
            Err(error) => Err(error.into()),
        })
    }

    async fn contenders(
        store: &Accessor<U, Self>,
        name: String,
        limit: u32,
    ) -> wasmtime::Result<Result<locks::LockQueue, types::Error>> {
        let call = store.with(|mut access| access.get().ctx.contenders_call(&name));
        let queue = match call {
            Ok(call) => call.run(limit).await,
            Err(error) => Err(error),
        };
        Ok(match queue {
            Ok(queue) => Ok(queue.into()),
            Err(error) => Err(error.into()),
        })
    }
}

impl<U> locks::HostLockWithStore<U> for HasWardlock {
    fn not_held(
        mut store: Access<'_, U, Self>,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<FutureReader<types::Status>> {
        let not_held = {
            let view = store.get();
            let slot = future_slot(&view)?;
            let handle = view.table.get_mut(&lock)?;
            (view.ctx.not_held(handle), slot)
        };
        status_future(store, not_held)
    }

    async fn revocation_requested(
        store: &Accessor<U, Self>,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<bool> {
        let asked = store.with(|mut access| {
            let view = access.get();
            let handle = view.table.get(&lock)?;
            wasmtime::Result::<_>::Ok(view.ctx.revocation_requested(handle))
        })?;
        Ok(asked.await)
    }

    fn revoked(
        mut store: Access<'_, U, Self>,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<FutureReader<()>> {
        let (mut watch, slot) = {
            let view = store.get();
            let slot = future_slot(&view)?;
            (view.ctx.subscribe_revocation(view.table.get(&lock)?), slot)
        };
        FutureReader::new(&mut store, async move {
            let _slot = slot;
            watch.until_requested().await;
            wasmtime::Result::<()>::Ok(())
        })
    }
}

impl<U> locks::HostPermitWithStore<U> for HasWardlock {
    fn not_held(
        mut store: Access<'_, U, Self>,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<FutureReader<types::Status>> {
        let not_held = {
            let view = store.get();
            let slot = future_slot(&view)?;
            (view.ctx.permit_not_held(view.table.get(&permit)?), slot)
        };
        status_future(store, not_held)
    }
}

impl locks::HostPermit for WardlockView<'_> {
    fn name(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&permit)?.name.to_string())
    }

    fn permits(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u32> {
        Ok(self.table.get(&permit)?.permits)
    }

    fn fencing_token(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&permit)?.fencing_token())
    }

    fn status(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<types::Status> {
        let handle = self.table.get(&permit)?;
        Ok(self.ctx.permit_status(handle).into())
    }

    fn release(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let handle = self.table.get_mut(&permit)?;
        Ok(self.ctx.release_permit(handle).map_err(types::Error::from))
    }

    fn drop(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<()> {
        let handle = self.table.delete(permit)?;
        self.ctx.drop_permit(handle);
        Ok(())
    }
}

impl locks::HostLock for WardlockView<'_> {
    fn name(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<String> {
        Ok(self.handle(&lock)?.name.to_string())
    }

    fn mode(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<types::Mode> {
        Ok(self.handle(&lock)?.mode.into())
    }

    fn fencing_token(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<u64> {
        Ok(self.handle(&lock)?.token)
    }

    fn status(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<types::Status> {
        Ok(self.lock_status(&lock)?.into())
    }

    fn release(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        Ok(self.release_lock(&lock)?.map_err(types::Error::from))
    }

    fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        self.drop_lock(lock)
    }
}
