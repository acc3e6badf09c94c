//! Flags choosing the lock backend (shared by `run` and `serve`).

use std::sync::Arc;
use std::time::Duration;

use crate::backend::LockBackend;
use crate::backend::etcd::{EtcdBackend, EtcdConfig};
use crate::backend::memory::MemoryBackend;
use crate::backend::zookeeper::{Dialect, LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};
use crate::secret::Secret;

use super::security_args::{EtcdSecurityArgs, ZkSecurityArgs};
use anyhow::bail;
use clap::{Args, ValueEnum};

/// Lock backends the CLI can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// In-process locks shared by the instances of this host (the embedded default).
    Memory,
    /// A ZooKeeper ensemble (implied by --zookeeper).
    Zookeeper,
    /// An etcd v3 cluster (implied by --etcd).
    Etcd,
}

/// Which lock service guests lock on.
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// Lock backend (default: memory; zookeeper when --zookeeper is given,
    /// etcd when --etcd is).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,

    /// Where and how to lock on ZooKeeper.
    #[command(flatten)]
    pub zookeeper: ZooKeeperArgs,

    /// etcd cluster endpoints, HOST:PORT[,HOST:PORT...]: selects the etcd
    /// backend. Locks are shared with `etcdctl lock <root>/<NAME>` (a `/`
    /// inside NAME is written `%2F`); --session-timeout is the host lease's
    /// TTL (whole seconds) and --root the key prefix.
    #[arg(long, value_name = "HOST:PORT[,...]", conflicts_with = "zookeeper")]
    pub etcd: Option<String>,

    /// TLS and a user for etcd.
    #[command(flatten)]
    pub etcd_security: EtcdSecurityArgs,

    /// How this host's guests share a lock on ZooKeeper.
    #[command(flatten)]
    pub handoff: HandoffArgs,

    /// Exit at start when the lock service cannot be reached. Without it the
    /// host starts anyway (not ready: lock requests fail at once with
    /// `unavailable`) and connects in the background as soon as the service
    /// answers, so hosts and lock service may start in any order.
    #[arg(long)]
    pub require_backend: bool,
}

/// The ZooKeeper flags (of `run`, `serve` and `status`).
#[derive(Debug, Args)]
pub struct ZooKeeperArgs {
    /// ZooKeeper ensemble, HOST:PORT[,HOST:PORT...]. For `run` and `serve` it
    /// selects the zookeeper backend; `status` defaults to 127.0.0.1:2181.
    #[arg(id = "zookeeper", long = "zookeeper", value_name = "HOST:PORT[,...]")]
    pub hosts: Option<String>,

    /// ZooKeeper sessions this host spreads its locks over (by lock name), so
    /// one session's strict request order does not serialise unrelated locks.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub zk_sessions: usize,

    /// ZooKeeper session timeout in seconds (the safety net if the host dies).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub session_timeout: f64,

    /// Node naming dialect on ZooKeeper, to share locks with other clients:
    /// curator-rw (Curator InterProcessReadWriteLock), curator-mutex (Curator
    /// InterProcessMutex; exclusive only) or kazoo (Lock/WriteLock/ReadLock).
    #[arg(long, value_name = "NAME", default_value = "curator-rw", value_parser = Dialect::parse)]
    pub dialect: Dialect,

    /// Digest credentials USER:PASSWORD on the command line, where every
    /// user of the machine reads them in `ps`: deprecated, prefer
    /// --zk-digest-file (a warning says so).
    #[arg(long, value_name = "USER:PASSWORD", conflicts_with = "zk_digest_file")]
    pub zk_digest: Option<String>,

    /// A file holding the digest credentials USER:PASSWORD (one line);
    /// wardlock's nodes then get the creator-only ACL so other ZooKeeper
    /// users cannot delete them. The credentials never appear in logs,
    /// errors or status output.
    #[arg(long, value_name = "FILE")]
    pub zk_digest_file: Option<std::path::PathBuf>,

    /// Root path under which lock names live in the backend (ZooKeeper:
    /// `<root>/<name>`; the memory backend keeps one namespace per host).
    #[arg(long, value_name = "PATH", default_value = "/wardlock")]
    pub root: String,

    /// TLS and SASL for ZooKeeper.
    #[command(flatten)]
    pub security: ZkSecurityArgs,
}

/// Host-local hand-off on ZooKeeper (of `run` and `serve`).
#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// Let every guest queue on ZooKeeper on its own, instead of the host
    /// queueing once per lock and handing the grant among its guests in memory.
    /// On etcd (one key per host and lock, under the host's lease) the host
    /// then gives its key up after every local holder.
    #[arg(long)]
    pub no_local_handoff: bool,

    /// Local hand-offs still made once a guest of another host queues behind
    /// this host's node (the fairness bound).
    #[arg(long, value_name = "N", default_value_t = LocalHandoff::default().max_handoffs)]
    pub handoff_max: u32,

    /// How long after another host's guest queued local hand-offs may go on.
    #[arg(long, value_name = "MS", default_value_t = 10)]
    pub handoff_max_ms: u64,

    /// Keep this host's node this long after the last local release, so an
    /// immediate re-acquire on this host costs no round trip (0: no linger).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub linger_ms: u64,
}

impl HandoffArgs {
    /// The hand-off limits these flags describe; `None` when turned off.
    pub fn limits(&self) -> Option<LocalHandoff> {
        (!self.no_local_handoff).then(|| LocalHandoff {
            max_handoffs: self.handoff_max,
            max_time: Duration::from_millis(self.handoff_max_ms),
            linger: Duration::from_millis(self.linger_ms),
        })
    }
}

impl HandoffArgs {
    /// The hand-off limits on etcd, where a host always queues one key per
    /// lock: turned off, the key goes after every local holder.
    pub fn etcd_limits(&self) -> LocalHandoff {
        self.limits().unwrap_or(LocalHandoff {
            max_handoffs: 0,
            max_time: Duration::ZERO,
            linger: Duration::ZERO,
        })
    }
}

impl ZooKeeperArgs {
    /// The configuration these flags describe, on ensemble `hosts`.
    ///
    /// # Errors
    /// A session timeout that is not a positive number of seconds; a
    /// --zk-digest-file that cannot be read.
    pub fn config(&self, hosts: &str) -> anyhow::Result<ZooKeeperConfig> {
        let session_timeout = positive_secs("--session-timeout", self.session_timeout)?;
        let mut config = ZooKeeperConfig::new(hosts)
            .root(self.root.clone())
            .session_timeout(session_timeout)
            .sessions(self.zk_sessions)
            .dialect(self.dialect);
        if let Some(digest) = &self.zk_digest {
            tracing::warn!(
                "--zk-digest puts the password on the command line, where `ps` shows it to every user; use --zk-digest-file FILE"
            );
            config = config.digest_auth(digest.clone());
        }
        if let Some(file) = &self.zk_digest_file {
            let digest =
                Secret::from_file(file).map_err(|e| anyhow::anyhow!("--zk-digest-file: {e}"))?;
            config.digest_auth = Some(digest);
        }
        Ok(config.tls(self.security.tls()?).sasl(self.security.sasl()?))
    }
}

/// A backend described independently of how it was given (flags or a config file).
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// The in-memory backend.
    Memory,
    /// A ZooKeeper ensemble.
    ZooKeeper(ZooKeeperConfig),
    /// An etcd cluster.
    Etcd(EtcdConfig),
}

impl BackendArgs {
    /// The backend these flags describe.
    ///
    /// # Errors
    /// Contradictory or invalid flags, named.
    pub fn spec(&self) -> anyhow::Result<BackendSpec> {
        let hosts = &self.zookeeper.hosts;
        let kind = self.backend.unwrap_or(match (hosts, &self.etcd) {
            (Some(_), _) => BackendKind::Zookeeper,
            (None, Some(_)) => BackendKind::Etcd,
            (None, None) => BackendKind::Memory,
        });
        match (kind, hosts, &self.etcd) {
            (BackendKind::Memory, None, None) => Ok(BackendSpec::Memory),
            (BackendKind::Memory | BackendKind::Etcd, Some(_), _) => {
                bail!("--zookeeper needs --backend zookeeper (or no --backend)")
            }
            (BackendKind::Memory | BackendKind::Zookeeper, _, Some(_)) => {
                bail!("--etcd needs --backend etcd (or no --backend)")
            }
            (BackendKind::Zookeeper, None, _) => {
                bail!("--backend zookeeper needs --zookeeper HOST:PORT[,HOST:PORT...]")
            }
            (BackendKind::Zookeeper, Some(hosts), None) => {
                let mut config = self.zookeeper.config(hosts)?;
                config.local_handoff = self.handoff.limits();
                Ok(BackendSpec::ZooKeeper(config))
            }
            (BackendKind::Etcd, None, None) => {
                bail!("--backend etcd needs --etcd HOST:PORT[,HOST:PORT...]")
            }
            (BackendKind::Etcd, None, Some(endpoints)) => {
                let ttl = positive_secs("--session-timeout", self.zookeeper.session_timeout)?;
                let config = EtcdConfig::new(endpoints)
                    .root(self.zookeeper.root.clone())
                    .lease_ttl(ttl)
                    .local_handoff(self.handoff.etcd_limits())
                    .tls(self.etcd_security.tls()?)
                    .credentials(self.etcd_security.credentials()?);
                config.validate()?;
                Ok(BackendSpec::Etcd(config))
            }
        }
    }
}

impl BackendSpec {
    /// Connects (ZooKeeper) or creates (memory) the backend. With `require`,
    /// a lock service that cannot be reached now is an error; without it the
    /// backend keeps connecting in the background.
    ///
    /// # Errors
    /// The backend's configuration is invalid; with `require`, it could not be
    /// reached.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped connect leaves no session behind.
    pub async fn connect(&self, require: bool) -> anyhow::Result<Arc<dyn LockBackend>> {
        match self {
            BackendSpec::Memory => Ok(Arc::new(MemoryBackend::new())),
            BackendSpec::ZooKeeper(config) if require => {
                tracing::info!(hosts = %config.hosts, "connecting to ZooKeeper");
                Ok(Arc::new(ZooKeeperBackend::connect(config.clone()).await?))
            }
            BackendSpec::ZooKeeper(config) => {
                tracing::info!(hosts = %config.hosts, "connecting to ZooKeeper");
                Ok(Arc::new(ZooKeeperBackend::start(config.clone()).await?))
            }
            BackendSpec::Etcd(config) if require => {
                tracing::info!(endpoints = %config.endpoints.join(","), "connecting to etcd");
                Ok(Arc::new(EtcdBackend::connect(config.clone()).await?))
            }
            BackendSpec::Etcd(config) => {
                tracing::info!(endpoints = %config.endpoints.join(","), "connecting to etcd");
                Ok(Arc::new(EtcdBackend::start(config.clone()).await?))
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
