//! The Postgres engine in the registry: `--postgres URL` (or `--backend
//! postgres`), a config entry `kind = "postgres"`.

mod settings;

use std::sync::Arc;

use wardlock_backend::LockBackend;
use wardlock_backend::registry::{ConnectFuture, Engine, EngineConfig, Mistake, Setting, Settings};

use crate::{NAME, PostgresBackend, PostgresConfig};

/// The Postgres engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresEngine;

impl Engine for PostgresEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "a PostgreSQL database's advisory locks, sharing keys with sqlx's PgAdvisoryLock (chosen by --postgres)"
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
