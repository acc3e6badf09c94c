//! `wardlock:lock@0.3.0`'s `guarded` interface: 0.2.2's guarded store as
//! concurrent host functions. Each call starts on the instance's state (the
//! name's grant, the holder's grant, the key) and waits for the lock
//! service away from it; a write, once sent, runs to its answer whether or
//! not the guest still waits for it (`ctx/writes_out.rs`).

use wasmtime::component::{Accessor, Resource};

use crate::backend::GuardedEntry;
use crate::capability::bindings_v3::wardlock::lock::{guarded, types};
use crate::capability::ctx::WriteCall;
use crate::capability::error::LockError;
use crate::capability::handle::LockHandle;
use crate::capability::{HasWardlock, WardlockView};

impl guarded::Host for WardlockView<'_> {}

impl<U> guarded::HostWithStore<U> for HasWardlock {
    async fn get(
        store: &Accessor<U, Self>,
        name: String,
        key: String,
    ) -> wasmtime::Result<Result<Option<guarded::Entry>, types::Error>> {
        let read = store.with(|mut access| access.get().ctx.guarded_read(&name));
        let entry = match read {
            Ok(read) => read.get(&key).await,
            Err(error) => Err(error),
        };
        Ok(answer(entry.map(|entry| entry.map(entry_of))))
    }

    async fn put(
        store: &Accessor<U, Self>,
        holder: Resource<LockHandle>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<u64, types::Error>> {
        Ok(answer(match write_call(store, &holder, &key)? {
            Ok(call) => call.put(value).await,
            Err(error) => Err(error),
        }))
    }

    async fn delete(
        store: &Accessor<U, Self>,
        holder: Resource<LockHandle>,
        key: String,
    ) -> wasmtime::Result<Result<bool, types::Error>> {
        Ok(answer(match write_call(store, &holder, &key)? {
            Ok(call) => call.delete().await,
            Err(error) => Err(error),
        }))
    }

    async fn keys(
        store: &Accessor<U, Self>,
        name: String,
        prefix: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<String>, types::Error>> {
        let read = store.with(|mut access| access.get().ctx.guarded_read(&name));
        Ok(answer(match read {
            Ok(read) => read.keys(&prefix, limit).await,
            Err(error) => Err(error),
        }))
    }
}

/// The start of a write through `holder` under `key`, on the instance's
/// state.
fn write_call<U>(
    store: &Accessor<U, HasWardlock>,
    holder: &Resource<LockHandle>,
    key: &str,
) -> wasmtime::Result<Result<WriteCall, LockError>> {
    store.with(|mut access| {
        let view = access.get();
        let handle = view.table.get(holder)?;
        Ok(view.ctx.holder_write_call(handle, key))
    })
}

/// A call's answer in the WIT's terms.
pub(super) fn answer<T>(result: Result<T, LockError>) -> Result<T, types::Error> {
    result.map_err(types::Error::from)
}

/// A backend's entry as the WIT's `entry`.
fn entry_of(entry: GuardedEntry) -> guarded::Entry {
    guarded::Entry {
        value: entry.value,
        token: entry.token,
        revision: entry.revision,
    }
}
