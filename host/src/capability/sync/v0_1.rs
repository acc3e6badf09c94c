//! The synchronous host traits of `wardlock:lock@0.1.0`, implemented on
//! [`WardlockView`] by running its async implementation (`../v0_1/`) to
//! completion: one implementation, two linkers, as wasmtime-wasi does for its
//! own sync bindings. Each method is written out, so the generated trait's
//! method leads to it.
//!
//! A blocked call blocks only the calling thread: it runs the async call on
//! wasmtime-wasi's runtime ([`in_tokio`]: the ambient tokio runtime if the
//! thread is in one, else a lazily built process-wide one), the same runtime
//! on which `wasmtime_wasi::p2::add_to_linker_sync` waits on pollables.

use wasmtime::component::Resource;
use wasmtime_wasi::runtime::in_tokio;

use super::bindings::v1;
use crate::capability::WardlockView;
use crate::capability::bindings::wardlock::lock as async_v1;
use crate::capability::handle::LockHandle;

impl v1::wardlock::lock::locks::Host for WardlockView<'_> {
    fn acquire(
        &mut self,
        name: String,
        options: v1::wardlock::lock::locks::Options,
    ) -> wasmtime::Result<Result<Resource<LockHandle>, async_v1::types::Error>> {
        let options = async_v1::locks::Options {
            mode: options.mode,
            timeout_ms: options.timeout_ms,
        };
        in_tokio(<Self as async_v1::locks::Host>::acquire(
            self, name, options,
        ))
    }

    fn try_acquire(
        &mut self,
        name: String,
        mode: async_v1::types::Mode,
    ) -> wasmtime::Result<Result<Option<Resource<LockHandle>>, async_v1::types::Error>> {
        in_tokio(<Self as async_v1::locks::Host>::try_acquire(
            self, name, mode,
        ))
    }
}

impl v1::wardlock::lock::locks::HostLock for WardlockView<'_> {
    fn name(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<String> {
        in_tokio(<Self as async_v1::locks::HostLock>::name(self, lock))
    }

    fn mode(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<async_v1::types::Mode> {
        in_tokio(<Self as async_v1::locks::HostLock>::mode(self, lock))
    }

    fn fencing_token(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<u64> {
        in_tokio(<Self as async_v1::locks::HostLock>::fencing_token(
            self, lock,
        ))
    }

    fn status(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<async_v1::types::Status> {
        in_tokio(<Self as async_v1::locks::HostLock>::status(self, lock))
    }

    fn release(
        &mut self,
        lock: Resource<LockHandle>,
    ) -> wasmtime::Result<Result<(), async_v1::types::Error>> {
        in_tokio(<Self as async_v1::locks::HostLock>::release(self, lock))
    }

    fn drop(&mut self, lock: Resource<LockHandle>) -> wasmtime::Result<()> {
        in_tokio(<Self as async_v1::locks::HostLock>::drop(self, lock))
    }
}
