//! The Valkey/Redis engine in the registry: `--redis URL` (or `--backend
//! redis`), a config entry `kind = "redis"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, EngineConfig, RemoteEngine};

use crate::{NAME, ValkeyBackend, ValkeyConfig};

/// The Valkey/Redis engine's registry entry.
pub const REDIS_ENGINE: RemoteEngine<ValkeyConfig> = RemoteEngine {
    name: NAME,
    about: "a Valkey or Redis server's keys: fair queues, sessions on the host's clock, rising tokens, redis-py Lock interop (chosen by --redis)",
    settings: settings::SETTINGS,
    configure: settings::config,
};

impl EngineConfig for ValkeyConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, require: bool) -> ConnectFuture<'_> {
        Box::pin(async move {
            tracing::info!(server = %self.url, root = %self.root, "connecting to Valkey/Redis");
            let backend = if require {
                ValkeyBackend::connect(self.clone()).await?
            } else {
                ValkeyBackend::start(self.clone()).await?
            };
            if let Some((server, accepted)) = backend.server() {
                for setting in &accepted {
                    tracing::warn!(%server, "running on an unsafe setting (--redis-accept-unsafe): {setting}");
                }
            }
            Ok(Arc::new(backend) as Arc<dyn LockBackend>)
        })
    }
}
