//! The engines this command line offers: the built-in ones (named here and
//! nowhere else) and any an embedder adds with [`Registry::with`].
//!
//! Engines describe themselves as plain data (`wardlock_backend::registry`);
//! this module renders each [`Setting`] as a flag of `run`, `serve` and
//! `status` (`flags.rs`) and reads it from a config file's `[backends.LABEL]`
//! entry (`entry.rs`).

mod common_flags;
mod entry;
mod flags;

use std::fmt;
use std::sync::Arc;

pub use common_flags::CommonFlags;
pub use wardlock_backend::registry::*;

/// The engines a command line offers, in the order `--help` lists them; the
/// first is the default when no flag chooses one.
#[derive(Clone)]
pub struct Registry {
    engines: Vec<Arc<dyn Engine>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// An empty registry (add engines with [`Registry::with`]; the first is
    /// the default).
    pub fn empty() -> Self {
        Registry {
            engines: Vec::new(),
        }
    }

    /// The engines built into `wardlock`: memory (the default), ZooKeeper,
    /// etcd, PostgreSQL and Valkey/Redis. This is the one place that names them.
    pub fn builtin() -> Self {
        Registry::empty()
            .with(wardlock_backend::memory::MemoryEngine)
            .with(wardlock_zookeeper::ZOOKEEPER_ENGINE)
            .with(wardlock_etcd::ETCD_ENGINE)
            .with(wardlock_postgres::POSTGRES_ENGINE)
            .with(wardlock_valkey::REDIS_ENGINE)
    }

    /// This registry with `engine` added, replacing an engine of the same name.
    pub fn with(mut self, engine: impl Engine) -> Self {
        self.engines.retain(|e| e.name() != engine.name());
        self.engines.push(Arc::new(engine));
        self
    }

    /// The engine called `name`.
    pub fn engine(&self, name: &str) -> Option<&dyn Engine> {
        self.engines
            .iter()
            .find(|e| e.name() == name)
            .map(|e| e.as_ref())
    }

    /// Every engine's name, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.engines.iter().map(|e| e.name()).collect()
    }

    /// The default engine: the first registered.
    ///
    /// # Errors
    /// The registry is empty.
    pub fn default_engine(&self) -> anyhow::Result<&dyn Engine> {
        self.engines
            .first()
            .map(|e| e.as_ref())
            .ok_or_else(|| anyhow::anyhow!("no lock engine is registered"))
    }

    /// Whether any engine takes the [`REMOTE_SETTINGS`].
    fn any_remote(&self) -> bool {
        self.engines.iter().any(|e| e.remote())
    }
}

/// Logs the warnings of the discouraged settings given (a password on the
/// command line).
fn warn_about(settings: &Settings) {
    for warning in settings.warnings() {
        tracing::warn!("{warning}");
    }
}
