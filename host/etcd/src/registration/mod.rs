//! The etcd engine in the registry: `--etcd HOST:PORT` (or `--backend etcd`),
//! a config entry `kind = "etcd"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, EngineConfig, RemoteEngine};

use crate::{EtcdBackend, EtcdConfig, NAME};

/// The etcd engine's registry entry.
pub const ETCD_ENGINE: RemoteEngine<EtcdConfig> = RemoteEngine {
    name: NAME,
    about: "an etcd v3 cluster, sharing locks with `etcdctl lock` (chosen by --etcd)",
    settings: settings::SETTINGS,
    configure: settings::config,
};

impl EngineConfig for EtcdConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, require: bool) -> ConnectFuture<'_> {
        Box::pin(async move {
            tracing::info!(endpoints = %self.endpoints.join(","), "connecting to etcd");
            let backend = if require {
                EtcdBackend::connect(self.clone()).await?
            } else {
                EtcdBackend::start(self.clone()).await?
            };
            Ok(Arc::new(backend) as Arc<dyn LockBackend>)
        })
    }
}
