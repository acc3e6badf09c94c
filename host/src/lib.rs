//! wardlock host runtime: distributed locks for sandboxed WebAssembly components.
//!
//! - [`backend`]: the pluggable [`LockBackend`] trait and the in-memory backend.
//! - [`capability`]: the `wardlock:lock` WIT interface for wasmtime embedders
//!   ([`add_to_linker`], [`WardlockCtx`], [`WardlockView`]).
//! - [`runner`]: runs WASI command components with lock sessions tied to each
//!   instance's lifetime (what the `wardlock` CLI uses).

pub mod backend;
pub mod capability;
pub mod cli;
pub mod name;
pub mod policy;
pub mod runner;

pub use backend::memory::MemoryBackend;
pub use backend::{BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession, Mode};
pub use capability::{
    HasWardlock, LockError, LockHandle, WardlockCtx, WardlockView, add_to_linker,
};
pub use name::{InvalidName, LockName};
pub use policy::LockPolicy;
