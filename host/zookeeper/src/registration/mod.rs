//! The ZooKeeper engine in the registry: `--zookeeper HOST:PORT` (or
//! `--backend zookeeper`), a config entry `kind = "zookeeper"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, EngineConfig, RemoteEngine};

use crate::{NAME, ZooKeeperBackend, ZooKeeperConfig};

/// The ZooKeeper engine's registry entry.
pub const ZOOKEEPER_ENGINE: RemoteEngine<ZooKeeperConfig> = RemoteEngine {
    name: NAME,
    about: "a ZooKeeper ensemble, Curator- and kazoo-compatible (chosen by --zookeeper)",
    settings: settings::SETTINGS,
    configure: settings::config,
};

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
