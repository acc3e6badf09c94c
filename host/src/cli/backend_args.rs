//! Flags choosing the lock backend (shared by `run` and `serve`).

use std::sync::Arc;
use std::time::Duration;

use crate::backend::LockBackend;
use crate::backend::memory::MemoryBackend;
use crate::backend::zookeeper::{Dialect, ZooKeeperBackend, ZooKeeperConfig};
use anyhow::bail;
use clap::{Args, ValueEnum};

/// Lock backends the CLI can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// In-process locks shared by the instances of this host (the embedded default).
    Memory,
    /// A ZooKeeper ensemble (implied by --zookeeper).
    Zookeeper,
}

/// Which lock service guests lock on.
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// Lock backend (default: memory, or zookeeper when --zookeeper is given).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,

    /// ZooKeeper ensemble to lock on, HOST:PORT[,HOST:PORT...]; selects the
    /// zookeeper backend.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub zookeeper: Option<String>,

    /// ZooKeeper session timeout in seconds (the safety net if the host dies).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub session_timeout: f64,

    /// Node naming dialect on ZooKeeper, to share locks with other clients:
    /// curator-rw (Curator InterProcessReadWriteLock), curator-mutex (Curator
    /// InterProcessMutex; exclusive only) or kazoo (Lock/WriteLock/ReadLock).
    #[arg(long, value_name = "NAME", default_value = "curator-rw", value_parser = Dialect::parse)]
    pub dialect: Dialect,

    /// Digest credentials USER:PASSWORD; wardlock's nodes then get the
    /// creator-only ACL so other ZooKeeper users cannot delete them.
    #[arg(long, value_name = "USER:PASSWORD")]
    pub zk_digest: Option<String>,

    /// Root path under which lock names live in the backend (ZooKeeper:
    /// `<root>/<name>`; the memory backend keeps one namespace per host).
    #[arg(long, value_name = "PATH", default_value = "/wardlock")]
    pub root: String,
}

/// A backend described independently of how it was given (flags or a config file).
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// The in-memory backend.
    Memory,
    /// A ZooKeeper ensemble.
    ZooKeeper(ZooKeeperConfig),
}

impl BackendArgs {
    /// The backend these flags describe.
    ///
    /// # Errors
    /// Contradictory or invalid flags, named.
    pub fn spec(&self) -> anyhow::Result<BackendSpec> {
        let kind = self.backend.unwrap_or(if self.zookeeper.is_some() {
            BackendKind::Zookeeper
        } else {
            BackendKind::Memory
        });
        match kind {
            BackendKind::Memory => {
                if self.zookeeper.is_some() {
                    bail!("--zookeeper needs --backend zookeeper (or no --backend)");
                }
                Ok(BackendSpec::Memory)
            }
            BackendKind::Zookeeper => {
                let Some(hosts) = &self.zookeeper else {
                    bail!("--backend zookeeper needs --zookeeper HOST:PORT[,HOST:PORT...]");
                };
                let session_timeout = positive_secs("--session-timeout", self.session_timeout)?;
                let mut config = ZooKeeperConfig::new(hosts.clone())
                    .root(self.root.clone())
                    .session_timeout(session_timeout)
                    .dialect(self.dialect);
                if let Some(digest) = &self.zk_digest {
                    config = config.digest_auth(digest.clone());
                }
                Ok(BackendSpec::ZooKeeper(config))
            }
        }
    }
}

impl BackendSpec {
    /// Connects (ZooKeeper) or creates (memory) the backend.
    ///
    /// # Errors
    /// The backend could not be reached or its configuration is invalid.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect leaves no session behind.
    pub async fn connect(&self) -> anyhow::Result<Arc<dyn LockBackend>> {
        match self {
            BackendSpec::Memory => Ok(Arc::new(MemoryBackend::new())),
            BackendSpec::ZooKeeper(config) => {
                tracing::info!(hosts = %config.hosts, "connecting to ZooKeeper");
                Ok(Arc::new(ZooKeeperBackend::connect(config.clone()).await?))
            }
        }
    }
}

/// `secs` as a duration, or an error naming `flag` unless it is positive and finite.
pub fn positive_secs(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        bail!("{flag} must be a positive number of seconds, got {secs}")
    }
}
