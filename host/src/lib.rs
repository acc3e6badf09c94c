#![deny(missing_docs)]

//! wardlock host runtime: distributed locks for sandboxed WebAssembly components.
//!
//! - [`capability`]: the `wardlock:lock` WIT interface for wasmtime embedders
//!   ([`add_to_linker`], [`add_to_linker_sync`] for synchronous hosts,
//!   [`WardlockCtx`], [`WardlockView`]).
//! - [`keyvalue`]: the standard `wasi:keyvalue` (0.2.0-draft and 0.2.0-draft2) served from
//!   the lock engine, its writes fenced by an instance's declared locks
//!   ([`keyvalue::add_to_linker`], [`keyvalue::KeyValueCtx`]).
//! - [`locks`]: the host's lock table (who holds and waits for what, for the
//!   admin page) and the deadlock detector over it.
//! - [`runner`]: runs WASI command components with lock sessions tied to each
//!   instance's lifetime (what the `wardlock` command line uses).
//! - [`backend`]: the engine toolkit, re-exported from `wardlock-backend`: the
//!   pluggable [`LockBackend`] trait and the in-memory engine
//!   ([`MemoryBackend`], the embedded default).
//!
//! This crate names no engine: the ZooKeeper, etcd and PostgreSQL engines are crates of
//! their own (`wardlock-zookeeper`, `wardlock-etcd`, `wardlock-postgres`), built on the toolkit
//! alone, and the `wardlock` command line (crate `wardlock`) is the one place
//! that names the built-in engines. An embedder passes any
//! `Arc<dyn LockBackend>` to [`WardlockCtx`].

pub mod capability;
pub mod keyvalue;
pub mod locks;
pub mod policy;
pub mod runner;

/// The engine toolkit (`wardlock-backend`), where it used to live: the
/// [`LockBackend`] trait, the memory engine, hand-off and the rest.
pub use wardlock_backend as backend;
pub use wardlock_backend::{name, secret};

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
