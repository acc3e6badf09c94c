//! The `wardlock:lock` capability, packaged the way wasmtime packages WASI
//! capabilities: a per-instance context ([`WardlockCtx`]) kept in the Store data, a
//! borrowed view ([`WardlockView`]) implementing the generated host traits, a
//! [`HasWardlock`] marker and [`add_to_linker`], so a platform adds locks to its own
//! linker next to WASI, for its own world.
//!
//! ```no_run
//! use std::sync::Arc;
//! use wasmtime::component::{Linker, ResourceTable};
//! use wardlock_host::{LockPolicy, MemoryBackend, WardlockCtx, WardlockView};
//!
//! struct MyState { table: ResourceTable, locks: WardlockCtx }
//!
//! # fn main() -> wasmtime::Result<()> {
//! let engine = wasmtime::Engine::default();
//! let mut linker = Linker::<MyState>::new(&engine);
//! wardlock_host::add_to_linker(&mut linker, |s: &mut MyState| WardlockView::new(&mut s.locks, &mut s.table))?;
//! let backend = MemoryBackend::new();
//! let state = MyState {
//!     table: ResourceTable::new(),
//!     locks: WardlockCtx::new(&backend, Arc::new(LockPolicy::new()), "my-plugin#1"),
//! };
//! # let _ = state; Ok(()) }
//! ```

pub mod bindings;
mod ctx;
mod error;
mod handle;
mod host_impl;

use wasmtime::component::{HasData, Linker, ResourceTable};

pub use ctx::WardlockCtx;
pub use error::LockError;
pub use handle::LockHandle;

/// The lock capability's borrowed view of one instance's state: its
/// [`WardlockCtx`] and the resource table holding its `lock` handles.
pub struct WardlockView<'a> {
    ctx: &'a mut WardlockCtx,
    table: &'a mut ResourceTable,
}

impl<'a> WardlockView<'a> {
    /// Borrows an instance's lock context and resource table.
    pub fn new(ctx: &'a mut WardlockCtx, table: &'a mut ResourceTable) -> Self {
        WardlockView { ctx, table }
    }
}

/// Marker type naming [`WardlockView`] as the data the generated bindings use.
pub struct HasWardlock;

impl HasData for HasWardlock {
    type Data<'a> = WardlockView<'a>;
}

/// Adds the `wardlock:lock/types` and `wardlock:lock/locks` imports to `linker`.
///
/// `view` borrows the lock state out of the Store data `T`.
///
/// # Errors
/// When the linker already defines those imports.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> WardlockView<'_>,
) -> wasmtime::Result<()> {
    bindings::wardlock::lock::types::add_to_linker::<T, HasWardlock>(linker, view)?;
    bindings::wardlock::lock::locks::add_to_linker::<T, HasWardlock>(linker, view)?;
    Ok(())
}
