//! The lock capability for hosts on wasmtime's synchronous API
//! (`Linker::instantiate`, `InstancePre::instantiate`, `Func::call`,
//! `wasmtime_wasi::p2::add_to_linker_sync`): [`add_to_linker_sync`], with the
//! same [`WardlockCtx`](super::WardlockCtx) and [`WardlockView`] as the async
//! [`add_to_linker`](super::add_to_linker), and [`block_on`] for the async
//! set-up calls (connecting a backend) such a host makes once.
//!
//! A wait blocks the calling thread only; bound it with
//! [`WardlockCtx::set_wait_limit`](super::WardlockCtx::set_wait_limit) and end
//! it from another thread with
//! [`WardlockCtx::interrupt_handle`](super::WardlockCtx::interrupt_handle).

mod bindings;
mod v0_1;
mod v0_2;

use std::future::Future;

use wasmtime::component::Linker;

use super::{HasWardlock, WardlockView};

/// Adds both versions of `wardlock:lock` (0.1.0 and 0.2.0) to a linker used
/// through wasmtime's synchronous API. Same arguments and semantics as
/// [`add_to_linker`](super::add_to_linker): one lock session per Store,
/// deadlines, `timeout`, loss, everything released when the Store drops or
/// the plugin traps. Guests of 0.2.0 also import `wasi:io/poll`, which
/// `wasmtime_wasi::p2::add_to_linker_sync` provides.
///
/// The embedder needs no tokio runtime of its own: blocking calls run on the
/// ambient one if the calling thread is inside a runtime's context (but not
/// on one of its worker threads), else on the process-wide runtime
/// wasmtime-wasi's sync bindings use.
///
/// # Errors
/// When the linker already defines those imports.
pub fn add_to_linker_sync<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> WardlockView<'_>,
) -> wasmtime::Result<()> {
    super::bindings::wardlock::lock::types::add_to_linker::<T, HasWardlock>(linker, view)?;
    bindings::v1::wardlock::lock::locks::add_to_linker::<T, HasWardlock>(linker, view)?;
    super::bindings_v2::wardlock::lock::types::add_to_linker::<T, HasWardlock>(linker, view)?;
    bindings::v2::wardlock::lock::locks::add_to_linker::<T, HasWardlock>(linker, view)?;
    bindings::v2::wardlock::lock::guarded::add_to_linker::<T, HasWardlock>(linker, view)?;
    bindings::v2::wardlock::lock::election::add_to_linker::<T, HasWardlock>(linker, view)?;
    Ok(())
}

/// Runs `future` to completion on the runtime [`add_to_linker_sync`]'s
/// calls run on, for a synchronous host's async set-up calls, e.g.
/// connecting a backend (`ZooKeeperBackend::connect`). A backend keeps
/// working after `block_on` returns: its background tasks live on that
/// runtime.
///
/// # Panics
/// When called from inside an async task (as tokio's `block_on` does).
pub fn block_on<F: Future>(future: F) -> F::Output {
    wasmtime_wasi::runtime::in_tokio(future)
}
