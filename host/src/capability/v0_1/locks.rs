//! `wardlock:lock@0.1.0`'s `locks` and `types` interfaces, implemented on
//! [`WardlockView`]: each call is one of the lock calls every version has
//! (`lock_calls.rs`), converted to this version's generated types.

use wasmtime::component::Resource;

use crate::capability::WardlockView;
use crate::capability::bindings::wardlock::lock::{locks, types};
use crate::capability::handle::LockHandle;

/// What a 0.1.0 call that can fail answers: a trap (`Err`), or the
/// guest's own error in 0.1.0's types.
type Answer<T> = wasmtime::Result<Result<T, types::Error>>;

impl types::Host for WardlockView<'_> {}

impl locks::Host for WardlockView<'_> {
    async fn acquire(
        &mut self,
        name: String,
        options: locks::Options,
    ) -> Answer<Resource<LockHandle>> {
        let acquired = self
            .acquire_lock(&name, options.mode.into(), options.timeout_ms)
            .await?;
        Ok(acquired.map_err(types::Error::from))
    }

    async fn try_acquire(
        &mut self,
        name: String,
        mode: types::Mode,
    ) -> Answer<Option<Resource<LockHandle>>> {
        let tried = self.try_acquire_lock(&name, mode.into()).await?;
        Ok(tried.map_err(types::Error::from))
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

    async fn release(&mut self, lock: Resource<LockHandle>) -> Answer<()> {
        Ok(self.release_lock(&lock)?.map_err(types::Error::from))
    }

    async fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        self.drop_lock(lock)
    }
}
