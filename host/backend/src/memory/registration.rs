//! The memory engine in the registry (`--backend memory`, a config entry
//! `kind = "memory"`): the default, with no flags and no settings of its own.

use std::any::Any;
use std::sync::Arc;

use serde::Deserialize;

use super::MemoryBackend;
use crate::name::LockName;
use crate::registry::{
    CommonFlags, ConnectFuture, Engine, EngineConfig, Entry, Mistake, StatusFuture,
};

/// The in-memory engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryEngine;

/// The in-memory engine's configuration: there is nothing to configure; each
/// connect makes a fresh, empty backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryConfig;

/// A config entry of the memory engine takes no keys but `kind`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryEntry {}

impl Engine for MemoryEngine {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn about(&self) -> &'static str {
        "in-process locks shared by the instances of this host (the embedded default)"
    }

    fn config_from_flags(
        &self,
        _common: &CommonFlags,
        _matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        Ok(Arc::new(MemoryConfig))
    }

    fn config_from_entry(&self, entry: Entry<'_>) -> Result<Arc<dyn EngineConfig>, Mistake> {
        let MemoryEntry {} = entry.parse()?;
        Ok(Arc::new(MemoryConfig))
    }
}

impl EngineConfig for MemoryConfig {
    fn engine(&self) -> &'static str {
        "memory"
    }

    fn connect(&self, _require: bool) -> ConnectFuture<'_> {
        Box::pin(async { Ok(Arc::new(MemoryBackend::new()) as Arc<dyn crate::LockBackend>) })
    }

    fn status<'a>(&'a self, _lock: &'a LockName, _json: bool) -> StatusFuture<'a> {
        Box::pin(async {
            anyhow::bail!(
                "memory locks live inside the host process that runs the guests; `status` asks a lock service: choose its engine (--backend NAME and its flags)"
            )
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
