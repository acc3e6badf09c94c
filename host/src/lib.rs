#![deny(missing_docs)]

//! wardlock host runtime: distributed locks for sandboxed WebAssembly components.
//!
//! - [`backend`]: the pluggable [`LockBackend`] trait, the in-memory backend
//!   ([`MemoryBackend`], the embedded default) and the ZooKeeper backend
//!   (`backend::zookeeper`, default feature `zookeeper`: Curator- and
//!   kazoo-compatible recipes).
//! - [`capability`]: the `wardlock:lock` WIT interface for wasmtime embedders
//!   ([`add_to_linker`], [`add_to_linker_sync`] for synchronous hosts,
//!   [`WardlockCtx`], [`WardlockView`]).
//! - [`runner`]: runs WASI command components with lock sessions tied to each
//!   instance's lifetime (what the `wardlock` CLI uses).
//!
//! - [`registry`] (feature `cli`): the open registry of lock engines that the
//!   command line and the config file consult; an embedder adds its own.
//! - [`cli`] (default feature `cli`): the `wardlock` command line (`run`,
//!   `serve`, `compile`, `status`). An embedder that sets
//!   `default-features = false` compiles neither clap, tracing-subscriber,
//!   prometheus-client nor toml.

pub mod backend;
pub mod capability;
#[cfg(feature = "cli")]
pub mod cli;
pub mod name;
pub mod policy;
#[cfg(feature = "cli")]
pub mod registry;
pub mod runner;
pub mod secret;

pub use backend::memory::MemoryBackend;
pub use backend::{
    BackendError, Grant, GrantId, GrantStatus, Health, LockBackend, LockSession, Mode, StatusChange,
};
pub use capability::{
    LockError, LockHandle, PendingLock, WaitInterrupt, WardlockCtx, WardlockView, add_to_linker,
    add_to_linker_sync,
};
pub use name::{InvalidName, LockName};
pub use policy::LockPolicy;
