//! The Postgres engine in the registry: `--postgres URL` (or `--backend
//! postgres`), a config entry `kind = "postgres"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, EngineConfig, RemoteEngine};

use crate::{NAME, PostgresBackend, PostgresConfig};

/// The PostgreSQL engine's registry entry.
pub const POSTGRES_ENGINE: RemoteEngine<PostgresConfig> = RemoteEngine {
    name: NAME,
    about: "a PostgreSQL database's advisory locks, sharing keys with sqlx's PgAdvisoryLock (chosen by --postgres)",
    settings: settings::SETTINGS,
    configure: settings::config,
};

impl EngineConfig for PostgresConfig {
    fn engine(&self) -> &'static str {
        NAME
    }

    fn connect(&self, require: bool) -> ConnectFuture<'_> {
        Box::pin(async move {
            tracing::info!(server = %redacted(&self.url), "connecting to PostgreSQL");
            let backend = if require {
                PostgresBackend::connect(self.clone()).await?
            } else {
                PostgresBackend::start(self.clone()).await?
            };
            Ok(Arc::new(backend) as Arc<dyn LockBackend>)
        })
    }
}

/// The URL without its query (which may name key files), for the log.
fn redacted(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}
