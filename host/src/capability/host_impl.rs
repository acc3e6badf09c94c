//! The generated WIT host traits, implemented on [`WardlockView`].

use std::time::Duration;

use wasmtime::component::Resource;

use super::WardlockView;
use super::bindings::wardlock::lock::{locks, types};
use super::error::LockError;
use super::handle::LockHandle;
use crate::backend::{GrantStatus, Mode};

impl From<types::Mode> for Mode {
    fn from(mode: types::Mode) -> Self {
        match mode {
            types::Mode::Exclusive => Mode::Exclusive,
            types::Mode::Shared => Mode::Shared,
        }
    }
}

impl From<Mode> for types::Mode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Exclusive => types::Mode::Exclusive,
            Mode::Shared => types::Mode::Shared,
        }
    }
}

impl From<GrantStatus> for types::Status {
    fn from(status: GrantStatus) -> Self {
        match status {
            GrantStatus::Held => types::Status::Held,
            GrantStatus::Suspended => types::Status::Suspended,
            GrantStatus::Lost => types::Status::Lost,
            GrantStatus::Released => types::Status::Released,
        }
    }
}

impl From<LockError> for types::Error {
    fn from(error: LockError) -> Self {
        match error {
            LockError::InvalidName(why) => types::Error::InvalidName(why.to_string()),
            // The payload is the whole sentence (it names the lock), written
            // once, by `LockError`'s Display; the SDKs show it as it is.
            LockError::Denied(_) => types::Error::Denied(error.to_string()),
            LockError::Timeout => types::Error::Timeout,
            LockError::WouldDeadlock(_) => types::Error::WouldDeadlock,
            LockError::Lost => types::Error::Lost,
            LockError::Released => types::Error::Released,
            LockError::LimitExceeded(why) => types::Error::LimitExceeded(why),
            LockError::Unavailable(why) => types::Error::Unavailable(why),
        }
    }
}

impl WardlockView<'_> {
    fn push(&mut self, handle: LockHandle) -> wasmtime::Result<Resource<LockHandle>> {
        Ok(self.table.push(handle)?)
    }

    fn handle(&self, handle: &Resource<LockHandle>) -> wasmtime::Result<&LockHandle> {
        Ok(self.table.get(handle)?)
    }
}

impl types::Host for WardlockView<'_> {}

impl locks::Host for WardlockView<'_> {
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
}
