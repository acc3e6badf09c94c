//! The etcd engine in the registry: `--etcd HOST:PORT` (or `--backend etcd`),
//! a config entry `kind = "etcd"`, and `wardlock status` over its keys.

mod file_entry;
mod flags;
mod status;

use std::any::Any;
use std::sync::Arc;

use clap::{Args, FromArgMatches};

use super::{EtcdBackend, EtcdConfig};
use wardlock_backend::LockBackend;
use wardlock_backend::name::LockName;
use wardlock_backend::registry::{
    CommonFlags, ConnectFuture, Engine, EngineConfig, Entry, Mistake, StatusFuture,
};

pub use flags::EtcdFlags;

/// The etcd engine's registry entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct EtcdEngine;

impl Engine for EtcdEngine {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn about(&self) -> &'static str {
        "an etcd v3 cluster, sharing locks with `etcdctl lock` (chosen by --etcd)"
    }

    fn flags(&self, command: clap::Command) -> clap::Command {
        EtcdFlags::augment_args(command)
    }

    fn chosen_by(&self, matches: &clap::ArgMatches) -> Option<&'static str> {
        let flags = EtcdFlags::from_arg_matches(matches).ok()?;
        flags.etcd.is_some().then_some("--etcd")
    }

    fn config_from_flags(
        &self,
        common: &CommonFlags,
        matches: &clap::ArgMatches,
    ) -> anyhow::Result<Arc<dyn EngineConfig>> {
        let flags = EtcdFlags::from_arg_matches(matches)?;
        let Some(endpoints) = &flags.etcd else {
            anyhow::bail!("--backend etcd needs --etcd HOST:PORT[,HOST:PORT...]");
        };
        Ok(Arc::new(flags.config(endpoints, common)?))
    }

    fn config_from_entry(&self, entry: Entry<'_>) -> Result<Arc<dyn EngineConfig>, Mistake> {
        Ok(Arc::new(file_entry::config(entry)?))
    }
}

impl EngineConfig for EtcdConfig {
    fn engine(&self) -> &'static str {
        "etcd"
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

    fn status<'a>(&'a self, lock: &'a LockName, json: bool) -> StatusFuture<'a> {
        Box::pin(status::print(self, lock, json))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
