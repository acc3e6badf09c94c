//! The etcd engine's own flags (of `run`, `serve` and `status`).

use std::path::PathBuf;

use clap::Args;

use super::super::EtcdConfig;
use wardlock_backend::registry::CommonFlags;
use wardlock_backend::tls::{Credentials, TlsFiles};

/// Which etcd cluster, and TLS and a user for it.
#[derive(Debug, Args)]
pub struct EtcdFlags {
    /// etcd cluster endpoints, HOST:PORT[,HOST:PORT...]: chooses the etcd
    /// engine. Locks are shared with `etcdctl lock <root>/<NAME>` (a `/`
    /// inside NAME is written `%2F`); --session-timeout is the host lease's
    /// TTL (whole seconds) and --root the key prefix.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub etcd: Option<String>,

    /// Reach etcd over TLS (https), trusting the server certificates this CA
    /// file (PEM) signed.
    #[arg(long, value_name = "FILE")]
    pub etcd_tls_ca: Option<PathBuf>,

    /// A client certificate (PEM), for clusters started with
    /// --client-cert-auth; with --etcd-tls-key.
    #[arg(long, value_name = "FILE")]
    pub etcd_tls_cert: Option<PathBuf>,

    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub etcd_tls_key: Option<PathBuf>,

    /// Authenticate as this etcd user (clusters with `auth enable`), with
    /// --etcd-password-file. It needs read and write on the --root prefix.
    #[arg(long, value_name = "USER", requires = "etcd_password_file")]
    pub etcd_user: Option<String>,

    /// A file holding the etcd user's password (one line).
    #[arg(long, value_name = "FILE", requires = "etcd_user")]
    pub etcd_password_file: Option<PathBuf>,
}

impl EtcdFlags {
    /// The configuration these flags and the common ones describe, on
    /// cluster `endpoints`.
    ///
    /// # Errors
    /// A lease TTL that is not a positive number of seconds; an incomplete set
    /// of TLS flags; a password file that cannot be read.
    pub fn config(&self, endpoints: &str, common: &CommonFlags) -> anyhow::Result<EtcdConfig> {
        let tls = TlsFiles::from_flags(
            "--etcd-tls",
            self.etcd_tls_ca.as_deref(),
            self.etcd_tls_cert.as_deref(),
            self.etcd_tls_key.as_deref(),
        )?;
        let credentials = Credentials::from_flags(
            self.etcd_user.as_deref(),
            self.etcd_password_file.as_deref(),
            "--etcd-password-file",
        )?;
        let config = EtcdConfig::new(endpoints)
            .root(common.root.clone())
            .lease_ttl(common.session_timeout()?)
            .local_handoff(common.handoff.limits_or_none())
            .tls(tls)
            .credentials(credentials);
        config.validate()?;
        Ok(config)
    }
}
