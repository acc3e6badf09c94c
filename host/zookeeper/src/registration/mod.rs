//! The ZooKeeper engine in the registry: `--zookeeper HOST:PORT` (or
//! `--backend zookeeper`), a config entry `kind = "zookeeper"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, Engine, EngineConfig, Mistake, Setting, Settings};

use crate::{NAME, ZooKeeperBackend, ZooKeeperConfig};

/// The ZooKeeper engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZooKeeperEngine;

impl Engine for ZooKeeperEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "a ZooKeeper ensemble, Curator- and kazoo-compatible (chosen by --zookeeper)"
    }

    fn settings(&self) -> &'static [Setting] {
        settings::SETTINGS
    }

    fn remote(&self) -> bool {
        true
    }

    fn configure(&self, settings: &Settings) -> Result<Arc<dyn EngineConfig>, Mistake> {
        Ok(Arc::new(settings::config(settings)?))
    }
}

impl EngineConfig for ZooKeeperConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, require: bool) -> ConnectFuture<'_> {
        Box::pin(async move {
            tracing::info!(hosts = %self.hosts, "connecting to ZooKeeper");
            let backend = if require {
                ZooKeeperBackend::connect(self.clone()).await?
            } else {
                ZooKeeperBackend::start(self.clone()).await?
            };
            Ok(Arc::new(backend) as Arc<dyn LockBackend>)
        })
    }
}
