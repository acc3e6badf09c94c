//! The ZooKeeper engine in the registry: `--zookeeper HOST:PORT` (or
//! `--backend zookeeper`), a config entry `kind = "zookeeper"`, and `wardlock
//! status` over its recipe's nodes.

mod file_entry;
mod flags;
mod status;

use std::any::Any;
use std::sync::Arc;

use clap::{Args, FromArgMatches};

use super::{ZooKeeperBackend, ZooKeeperConfig};
use wardlock_backend::LockBackend;
use wardlock_backend::name::LockName;
use wardlock_backend::registry::{
    CommonFlags, ConnectFuture, Engine, EngineConfig, Entry, Mistake, StatusFuture,
};

pub use flags::ZooKeeperFlags;

/// The ZooKeeper engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZooKeeperEngine;

impl Engine for ZooKeeperEngine {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn about(&self) -> &'static str {
        "a ZooKeeper ensemble, Curator- and kazoo-compatible (chosen by --zookeeper)"
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        ZooKeeperFlags::augment_args(command)
    }

    fn chosen_by(&self, matches: &clap::ArgMatches) -> Option<&'static str> {
        let flags = ZooKeeperFlags::from_arg_matches(matches).ok()?;
        flags.hosts.is_some().then_some("--zookeeper")
    }

    fn config_from_flags(
        &self,
        common: &CommonFlags,
        matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        let flags = ZooKeeperFlags::from_arg_matches(matches)?;
        let Some(hosts) = &flags.hosts else {
            anyhow::bail!("--backend zookeeper needs --zookeeper HOST:PORT[,HOST:PORT...]");
        };
        Ok(Arc::new(flags.config(hosts, common)?))
    }

    fn config_from_entry(&self, entry: Entry<'_>) -> Result<Arc<dyn EngineConfig>, Mistake> {
        Ok(Arc::new(file_entry::config(entry)?))
    }
}

impl EngineConfig for ZooKeeperConfig {
    fn engine(&self) -> &'static str {
        "zookeeper"
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

    fn status<'a>(&'a self, lock: &'a LockName, json: bool) -> StatusFuture<'a> {
        Box::pin(status::print(self, lock, json))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
