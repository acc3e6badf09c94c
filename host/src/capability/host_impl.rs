//! The generated WIT host traits of `wardlock:lock@0.1.0`, implemented on
//! [`WardlockView`]; the calls 0.2.0 shares with it are written once, as
//! macros used by both (0.2.0's own: `host_impl_v2.rs`).

use std::time::Duration;

use wasmtime::component::Resource;

use super::WardlockView;
use super::bindings::wardlock::lock::{locks, types};
use super::handle::LockHandle;

impl WardlockView<'_> {
    pub(super) fn push(&mut self, handle: LockHandle) -> wasmtime::Result<Resource<LockHandle>> {
        Ok(self.table.push(handle)?)
    }

    pub(super) fn handle(&self, handle: &Resource<LockHandle>) -> wasmtime::Result<&LockHandle> {
        Ok(self.table.get(handle)?)
    }
}

/// `acquire` and `try-acquire`, for the `locks::Host` impl of a version whose
/// generated modules are `locks` and `types`.
macro_rules! acquire_calls {
    () => {
        async fn acquire(
            &mut self,
            name: String,
            options: locks::Options,
        ) -> wasmtime::Result<Result<Resource<LockHandle>, types::Error>> {
            let timeout = options.timeout_ms.map(Duration::from_millis);
            match self.ctx.acquire(&name, options.mode.into(), timeout).await {
                Ok(handle) => Ok(Ok(self.push(handle)?)),
                Err(error) => Ok(Err(error.into())),
            }
        }

        async fn try_acquire(
            &mut self,
            name: String,
            mode: types::Mode,
        ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, types::Error>> {
            match self.ctx.try_acquire(&name, mode.into()).await {
                Ok(Some(handle)) => Ok(Ok(Some(self.push(handle)?))),
                Ok(None) => Ok(Ok(None)),
                Err(error) => Ok(Err(error.into())),
            }
        }
    };
}

/// The `lock` resource's methods both versions have, for its `HostLock` impl.
macro_rules! lock_methods {
    () => {
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
            let handle = self.table.get(&lock)?;
            Ok(self.ctx.status(handle).into())
        }

        async fn release(
            &mut self,
            lock: Resource<LockHandle>,
        ) -> wasmtime::Result<Result<(), types::Error>> {
            let handle = self.table.get_mut(&lock)?;
            Ok(self.ctx.release(handle).map_err(types::Error::from))
        }

        async fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
            let handle = self.table.delete(lock)?;
            self.ctx.drop_handle(handle);
            Ok(())
        }
    };
}

pub(super) use {acquire_calls, lock_methods};

impl types::Host for WardlockView<'_> {}

impl locks::Host for WardlockView<'_> {
    acquire_calls!();
}

impl locks::HostLock for WardlockView<'_> {
    lock_methods!();
}
