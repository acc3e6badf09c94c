//! The etcd engine in the registry: `--etcd HOST:PORT` (or `--backend etcd`),
//! a config entry `kind = "etcd"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, Engine, EngineConfig, Mistake, Setting, Settings};

use crate::{EtcdBackend, EtcdConfig, NAME};

/// The etcd engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct EtcdEngine;

impl Engine for EtcdEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "an etcd v3 cluster, sharing locks with `etcdctl lock` (chosen by --etcd)"
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
