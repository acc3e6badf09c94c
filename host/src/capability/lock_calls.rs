//! The lock calls every WIT version has (`acquire`, `try-acquire` and the
//! `lock` resource's methods), written once on [`WardlockView`] in terms of
//! the version-neutral types; each version's host trait (`v0_1/locks.rs`,
//! `v0_2/locks.rs`) calls them and converts to its own generated types.

use std::time::Duration;

use wasmtime::component::Resource;

use super::WardlockView;
use super::error::LockError;
use super::handle::LockHandle;
use crate::backend::{GrantStatus, Mode};

impl WardlockView<'_> {
    pub(super) fn push(&mut self, handle: LockHandle) -> wasmtime::Result<Resource<LockHandle>> {
        Ok(self.table.push(handle)?)
    }

    pub(super) fn handle(&self, handle: &Resource<LockHandle>) -> wasmtime::Result<&LockHandle> {
        Ok(self.table.get(handle)?)
    }

    /// `acquire`: waits for `name` in `mode` (at most `timeout_ms`).
    pub(super) async fn acquire_lock(
        &mut self,
        name: &str,
        mode: Mode,
        timeout_ms: Option<u64>,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, LockError>> {
        let timeout = timeout_ms.map(Duration::from_millis);
        match self.ctx.acquire(name, mode, timeout).await {
            Ok(handle) => Ok(Ok(self.push(handle)?)),
            Err(error) => Ok(Err(error)),
        }
    }

    /// `try-acquire`: `name` in `mode` if that needs no waiting.
    pub(super) async fn try_acquire_lock(
        &mut self,
        name: &str,
        mode: Mode,
    ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, LockError>> {
        match self.ctx.try_acquire(name, mode).await {
            Ok(Some(handle)) => Ok(Ok(Some(self.push(handle)?))),
            Ok(None) => Ok(Ok(None)),
            Err(error) => Ok(Err(error)),
        }
    }

    /// `lock.status`.
    pub(super) fn lock_status(&self, lock: &Resource<LockHandle>) -> wasmtime::Result<GrantStatus> {
        Ok(self.ctx.status(self.handle(lock)?))
    }

    /// `lock.release`.
    pub(super) fn release_lock(
        &mut self,
        lock: &Resource<LockHandle>,
    ) -> wasmtime::Result<Result<(), LockError>> {
        let handle = self.table.get_mut(lock)?;
        Ok(self.ctx.release(handle))
    }

    /// The `lock` resource's destructor.
    pub(super) fn drop_lock(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        let handle = self.table.delete(lock)?;
        self.ctx.drop_handle(handle);
        Ok(())
    }
}
