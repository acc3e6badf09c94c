//! The memory engine in the registry (`--backend memory`, a config entry
//! `kind = "memory"`): the default, with no settings of its own.

use std::sync::Arc;

use super::MemoryBackend;
use crate::LockBackend;
use crate::registry::{ConnectFuture, Engine, EngineConfig, Mistake, Settings};

/// The memory engine's name: `--backend memory`, `kind = "memory"`, and the
/// [`LockBackend::kind`] of its backends.
pub const NAME: &str = "memory";

/// The in-memory engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryEngine;

/// The in-memory engine's configuration: there is nothing to configure; each
/// connect makes a fresh, empty backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryConfig;

impl Engine for MemoryEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "in-process locks shared by the instances of this host (the embedded default)"
    }

    fn configure(&self, _settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake> {
        Ok(Arc::new(MemoryConfig))
    }
}

impl EngineConfig for MemoryConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, _require: bool) -> ConnectFuture<'_> {
        Box::pin(async { Ok(Arc::new(MemoryBackend::new()) as Arc<dyn LockBackend>) })
    }
}
