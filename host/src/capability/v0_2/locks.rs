//! `wardlock:lock@0.2.2`'s `locks` and `types` interfaces, implemented on
//! [`WardlockView`]: 0.1.0's calls (the lock calls every version has,
//! `lock_calls.rs`, converted to this version's types) plus
//! `subscribe`, `acquire-async` / `pending-lock`, `acquire-many`, the
//! semaphore `permit`s, revocation (`request-revocation`,
//! `lock.revocation-requested`, `lock.subscribe-revocation`) and, from
//! 0.2.1, `contenders`.

use std::time::Duration;

use wasmtime::component::Resource;
use wasmtime_wasi::p2::DynPollable;

use crate::capability::WardlockView;
use crate::capability::bindings_v2::wardlock::lock::{locks, types};
use crate::capability::handle::LockHandle;
use crate::capability::pending::PendingLock;
use crate::capability::permit::PermitHandle;
use crate::capability::revocation::RevocationWatch;

impl types::Host for WardlockView<'_> {}

impl locks::Host for WardlockView<'_> {
    async fn acquire(
        &mut self,
        name: String,
        options: locks::Options,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, types::Error>> {
        let acquired = self
            .acquire_lock(&name, options.mode.into(), options.timeout_ms)
            .await?;
        Ok(acquired.map_err(types::Error::from))
    }

    async fn try_acquire(
        &mut self,
        name: String,
        mode: types::Mode,
    ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, types::Error>> {
        let tried = self.try_acquire_lock(&name, mode.into()).await?;
        Ok(tried.map_err(types::Error::from))
    }

    async fn acquire_async(
        &mut self,
        name: String,
        options: locks::Options,
    ) -> wasmtime::Result<Result<Resource<PendingLock>, types::Error>> {
        let timeout = options.timeout_ms.map(Duration::from_millis);
        match self
            .ctx
            .acquire_async(&name, options.mode.into(), timeout)
            .await
        {
            Ok(pending) => Ok(Ok(self.table.push(pending)?)),
            Err(error) => Ok(Err(error.into())),
        }
    }

    async fn acquire_many(
        &mut self,
        requests: Vec<locks::Request>,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Vec<Resource<LockHandle>>, types::Error>> {
        let requests: Vec<_> = requests
            .into_iter()
            .map(|r| (r.name, r.mode.into()))
            .collect();
        let timeout = timeout_ms.map(Duration::from_millis);
        match self.ctx.acquire_many(&requests, timeout).await {
            Ok(handles) => {
                let mut pushed = Vec::with_capacity(handles.len());
                for handle in handles {
                    pushed.push(self.push(handle)?);
                }
                Ok(Ok(pushed))
            }
            Err(error) => Ok(Err(error.into())),
        }
    }

    async fn acquire_permit(
        &mut self,
        name: String,
        permits: u32,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<PermitHandle>, types::Error>> {
        let timeout = timeout_ms.map(Duration::from_millis);
        match self.ctx.acquire_permit(&name, permits, timeout).await {
            Ok(permit) => Ok(Ok(self.table.push(permit)?)),
            Err(error) => Ok(Err(error.into())),
        }
    }

    async fn try_acquire_permit(
        &mut self,
        name: String,
        permits: u32,
    ) -> wasmtime::Result<Result<Option<Resource<PermitHandle>>, types::Error>> {
        match self.ctx.try_acquire_permit(&name, permits).await {
            Ok(Some(permit)) => Ok(Ok(Some(self.table.push(permit)?))),
            Ok(None) => Ok(Ok(None)),
            Err(error) => Ok(Err(error.into())),
        }
    }

    async fn request_revocation(
        &mut self,
        name: String,
    ) -> wasmtime::Result<Result<u32, types::Error>> {
        Ok(self
            .ctx
            .request_revocation(&name)
            .await
            .map_err(types::Error::from))
    }

    async fn contenders(
        &mut self,
        name: String,
        limit: u32,
    ) -> wasmtime::Result<Result<locks::LockQueue, types::Error>> {
        Ok(match self.ctx.contenders(&name, limit).await {
            Ok(queue) => Ok(queue.into()),
            Err(error) => Err(error.into()),
        })
    }
}

impl locks::HostPermit for WardlockView<'_> {
    async fn name(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<String> {
        Ok(self.table.get(&permit)?.name.to_string())
    }

    async fn permits(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u32> {
        Ok(self.table.get(&permit)?.permits)
    }

    async fn fencing_token(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&permit)?.fencing_token())
    }

    async fn status(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<types::Status> {
        let handle = self.table.get(&permit)?;
        Ok(self.ctx.permit_status(handle).into())
    }

    async fn release(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        let handle = self.table.get_mut(&permit)?;
        Ok(self.ctx.release_permit(handle).map_err(types::Error::from))
    }

    async fn subscribe(
        &mut self,
        permit: Resource<PermitHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let handle = self.table.get_mut(&permit)?;
        self.ctx.subscribe_permit(handle);
        wasmtime_wasi::p2::subscribe(self.table, permit)
    }

    async fn drop(&mut self, permit: Resource<PermitHandle>) -> wasmtime::Result<()> {
        let handle = self.table.delete(permit)?;
        self.ctx.drop_permit(handle);
        Ok(())
    }
}

impl locks::HostLock for WardlockView<'_> {
    async fn name(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<String> {
        Ok(self.handle(&lock)?.name.to_string())
    }

    async fn mode(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<types::Mode> {
        Ok(self.handle(&lock)?.mode.into())
    }

    async fn fencing_token(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<u64> {
        Ok(self.handle(&lock)?.token)
    }

    async fn status(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<types::Status> {
        Ok(self.lock_status(&lock)?.into())
    }

    async fn release(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Result<(), types::Error>> {
        Ok(self.release_lock(&lock)?.map_err(types::Error::from))
    }

    async fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        self.drop_lock(lock)
    }

    async fn subscribe(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let handle = self.table.get_mut(&lock)?;
        self.ctx.subscribe(handle);
        wasmtime_wasi::p2::subscribe(self.table, lock)
    }

    async fn revocation_requested(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<bool> {
        let asked = self.ctx.revocation_requested(self.table.get(&lock)?);
        Ok(asked.await)
    }

    /// The pollable is a child of a [`RevocationWatch`] resource, itself a
    /// child of the lock: dropping the pollable drops the watch, and
    /// dropping the lock first traps, as the WIT says.
    async fn subscribe_revocation(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let watch = self.ctx.subscribe_revocation(self.table.get(&lock)?);
        let watch: Resource<RevocationWatch> = self.table.push_child(watch, &lock)?;
        wasmtime_wasi::p2::subscribe(self.table, watch)
    }
}

impl locks::HostPendingLock for WardlockView<'_> {
    async fn subscribe(
        &mut self,
        pending: Resource<PendingLock>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        wasmtime_wasi::p2::subscribe(self.table, pending)
    }

    async fn get(
        &mut self,
        pending: Resource<PendingLock>,
    ) -> wasmtime::Result<Option<Result<Resource<LockHandle>, types::Error>>> {
        let pending = self.table.get_mut(&pending)?;
        match self.ctx.take_pending(pending) {
            None => Ok(None),
            Some(Ok(handle)) => Ok(Some(Ok(self.push(handle)?))),
            Some(Err(error)) => Ok(Some(Err(error.into()))),
        }
    }

    async fn drop(&mut self, pending: Resource<PendingLock>) -> wasmtime::Result<()> {
        let pending = self.table.delete(pending)?;
        self.ctx.drop_pending(pending);
        Ok(())
    }
}
