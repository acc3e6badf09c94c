//! The open registry of lock engines: how `run`, `serve`, `status`, the config
//! file, the admin endpoints and the embedding examples find an engine.
//!
//! Each engine declares itself in one place, an [`Engine`] value beside its
//! code (`backend/memory/registration.rs`, `backend/zookeeper/registration/`,
//! `backend/etcd/registration/`): its name, its flags (clap), its config-file
//! entry (serde), and an [`EngineConfig`] that connects the backend and
//! answers `wardlock status`. Nothing outside an engine's folder names it: the
//! command line asks the [`Registry`] which engine the flags choose, the config
//! file which engine an entry's `kind` names, and the admin endpoint and
//! metrics label a backend by [`crate::LockBackend::kind`], which is the
//! engine's name.
//!
//! An embedder adds an engine of its own without editing wardlock:
//! `Registry::builtin().with(MyEngine)`, then `wardlock_host::cli::main(registry)`
//! for a `wardlock` binary that knows it (`host/examples/ticket-engine` does).
//! The registry is part of the command line (feature `cli`): a library embedder
//! that builds its backend in code needs none of it.

mod common_flags;
mod entry;

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use crate::LockBackend;
use crate::name::LockName;

pub use common_flags::{CommonFlags, HandoffFlags, positive_secs};
pub use entry::{Entry, Mistake, RemoteKeys, secs_at};

/// What [`EngineConfig::connect`] returns.
pub type ConnectFuture<'a> =
    Pin<Box<dyn Future<Output = anyhow::Result<Arc<dyn LockBackend>>> + Send + 'a>>;

/// What [`EngineConfig::status`] returns: the report, printed by the engine.
pub type StatusFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// One lock engine as the command line and the config file know it.
pub trait Engine: Send + Sync + 'static {
    /// The name `--backend NAME` and a config entry's `kind = "NAME"` select;
    /// also the [`LockBackend::kind`] of the backends it builds, which labels
    /// them in logs, `/readyz` and metrics. Lower case, unique in a registry.
    fn name(&self) -> &'static str;

    /// One line for `--backend`'s help.
    fn about(&self) -> &'static str;

    /// Adds the engine's own flags (`clap::Args::augment_args` of a derived
    /// struct) to `run`, `serve`, `status` and embedders' commands. Their names
    /// must be the engine's own (`--zk-…`, `--etcd-…`); the engine-neutral
    /// ones are [`CommonFlags`].
    fn flags(&self, command: clap::Command) -> clap::Command {
        command
    }

    /// The flag that chooses this engine without `--backend` when given
    /// (`--zookeeper`), if one was given.
    fn chosen_by(&self, matches: &clap::ArgMatches) -> Option<&'static str> {
        let _ = matches;
        None
    }

    /// The engine's configuration from the parsed command line.
    ///
    /// # Errors
    /// A missing or invalid flag, named (`--backend zookeeper needs
    /// --zookeeper HOST:PORT`).
    fn config_from_flags(
        &self,
        common: &CommonFlags,
        matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>>;

    /// The engine's configuration from a config file's `[backends.LABEL]`
    /// entry: every key but `kind`. Unknown keys are mistakes.
    ///
    /// # Errors
    /// The key at fault and what is wrong with it.
    fn config_from_entry(&self, entry: Entry<'_>) -> Result<Arc<dyn EngineConfig>, Mistake>;
}

/// One engine's configuration: enough to connect a backend, however it was
/// given (flags or a config file).
pub trait EngineConfig: fmt::Debug + Send + Sync + Any {
    /// The [`Engine::name`] of the engine that made it.
    fn engine(&self) -> &'static str;

    /// Connects (or creates) the backend. With `require`, a lock service that
    /// cannot be reached now is an error; without it the backend keeps
    /// connecting in the background.
    ///
    /// # Errors
    /// The configuration cannot work; with `require`, the service could not
    /// be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect leaves no session behind.
    fn connect(&self, require: bool) -> ConnectFuture<'_>;

    /// Prints who holds `lock` and who waits (`wardlock status`), as a table
    /// or JSON.
    ///
    /// # Errors
    /// The lock service could not be asked; by default, that the engine has
    /// no `status`.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    fn status<'a>(&'a self, lock: &'a LockName, json: bool) -> StatusFuture<'a> {
        let _ = (lock, json);
        let engine = self.engine();
        Box::pin(async move {
            anyhow::bail!("the {engine} engine cannot show a lock's holders and waiters")
        })
    }

    /// The configuration as [`Any`], for callers that need one engine's own
    /// type (`run --fault` wants the memory backend's handle).
    fn as_any(&self) -> &dyn Any;
}
