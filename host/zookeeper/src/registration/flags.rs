//! The ZooKeeper engine's own flags (of `run`, `serve` and `status`).

use std::path::PathBuf;

use clap::Args;

use super::super::{Dialect, ZooKeeperConfig};
use wardlock_backend::BackendError;
use wardlock_backend::registry::CommonFlags;
use wardlock_backend::secret::Secret;
use wardlock_backend::tls::{Credentials, TlsFiles};

/// Where and how to lock on ZooKeeper.
#[derive(Debug, Args)]
pub struct ZooKeeperFlags {
    /// ZooKeeper ensemble, HOST:PORT[,HOST:PORT...]: chooses the zookeeper
    /// engine.
    #[arg(id = "zookeeper", long = "zookeeper", value_name = "HOST:PORT[,...]")]
    pub hosts: Option<String>,

    /// ZooKeeper sessions this host spreads its locks over (by lock name), so
    /// one session's strict request order does not serialise unrelated locks.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub zk_sessions: usize,

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
    pub zk_digest_file: Option<PathBuf>,

    /// Reach ZooKeeper over TLS (its secureClientPort), trusting the server
    /// certificates this CA file (PEM) signed.
    #[arg(long, value_name = "FILE")]
    pub zk_tls_ca: Option<PathBuf>,

    /// A client certificate (PEM) for mutual TLS, with --zk-tls-key.
    #[arg(long, value_name = "FILE")]
    pub zk_tls_cert: Option<PathBuf>,

    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub zk_tls_key: Option<PathBuf>,

    /// Log in with SASL DIGEST-MD5 as this user (a user of the server's JAAS
    /// `Server` section), with --zk-sasl-password-file.
    #[arg(long, value_name = "USER", requires = "zk_sasl_password_file")]
    pub zk_sasl_user: Option<String>,

    /// A file holding the SASL user's password (one line).
    #[arg(long, value_name = "FILE", requires = "zk_sasl_user")]
    pub zk_sasl_password_file: Option<PathBuf>,
}

impl ZooKeeperFlags {
    /// The configuration these flags and the common ones describe, on
    /// ensemble `hosts`.
    ///
    /// # Errors
    /// A session timeout that is not a positive number of seconds; an
    /// incomplete set of TLS flags; a secret file that cannot be read.
    pub fn config(&self, hosts: &str, common: &CommonFlags) -> anyhow::Result<ZooKeeperConfig> {
        let mut config = ZooKeeperConfig::new(hosts)
            .root(common.root.clone())
            .session_timeout(common.session_timeout()?)
            .sessions(self.zk_sessions)
            .dialect(self.dialect);
        config.local_handoff = common.handoff.limits();
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
        Ok(config.tls(self.tls()?).sasl(self.sasl()?))
    }

    fn tls(&self) -> Result<Option<TlsFiles>, BackendError> {
        TlsFiles::from_flags(
            "--zk-tls",
            self.zk_tls_ca.as_deref(),
            self.zk_tls_cert.as_deref(),
            self.zk_tls_key.as_deref(),
        )
    }

    fn sasl(&self) -> Result<Option<Credentials>, BackendError> {
        Credentials::from_flags(
            self.zk_sasl_user.as_deref(),
            self.zk_sasl_password_file.as_deref(),
            "--zk-sasl-password-file",
        )
    }
}
