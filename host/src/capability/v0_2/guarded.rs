//! `wardlock:lock@0.2.2`'s `guarded` interface, implemented on [`WardlockView`]: each call goes to the
//! instance's [`WardlockCtx`](crate::capability::WardlockCtx) (`ctx/guarded.rs`).

use wasmtime::component::Resource;

use crate::backend::GuardedEntry;
use crate::capability::WardlockView;
use crate::capability::bindings_v2::wardlock::lock::{guarded, types};
use crate::capability::handle::LockHandle;

impl guarded::Host for WardlockView<'_> {
    async fn get(
        &mut self,
        name: String,
        key: String,
    ) -> wasmtime::Result<Result<Option<guarded::Entry>, types::Error>> {
        Ok(match self.ctx.guarded_get(&name, &key).await {
            Ok(entry) => Ok(entry.map(entry_of)),
            Err(error) => Err(error.into()),
        })
    }

    async fn put(
        &mut self,
        holder: Resource<LockHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, types::Error>> {
        let holder = match self.ctx.guarded_holder(self.table.get(&holder)?) {
            Ok(holder) => holder,
            Err(error) => return Ok(Err(error.into())),
        };
        let written = self.ctx.guarded_put(holder, &key, &value).await;
        Ok(written.map_err(types::Error::from))
    }

    async fn delete(
        &mut self,
        holder: Resource<LockHandle>,
        key: String,
    ) -> wasmtime::Result<Result<bool, types::Error>> {
        let holder = match self.ctx.guarded_holder(self.table.get(&holder)?) {
            Ok(holder) => holder,
            Err(error) => return Ok(Err(error.into())),
        };
        let deleted = self.ctx.guarded_delete(holder, &key).await;
        Ok(deleted.map_err(types::Error::from))
    }

    async fn keys(
        &mut self,
        name: String,
        prefix: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<String>, types::Error>> {
        let keys = self.ctx.guarded_keys(&name, &prefix, limit).await;
        Ok(keys.map_err(types::Error::from))
    }
}

/// A backend's entry as the WIT's `entry`.
pub(super) fn entry_of(entry: GuardedEntry) -> guarded::Entry {
    guarded::Entry {
        value: entry.value,
        token: entry.token,
        revision: entry.revision,
    }
}
