//! Flags that secure the connection to a lock service: TLS files and a user
//! whose password is read from a file (never given on the command line,
//! where every user of the machine reads it in `ps`).

use std::path::PathBuf;

use clap::Args;

use crate::backend::BackendError;
use crate::backend::tls::{Credentials, TlsFiles};

/// TLS and SASL to ZooKeeper (of `run`, `serve` and `status`).
#[derive(Debug, Args, Default)]
pub struct ZkSecurityArgs {
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

impl ZkSecurityArgs {
    /// The TLS settings these flags give, if any.
    ///
    /// # Errors
    /// An incomplete set of TLS flags, named.
    pub fn tls(&self) -> Result<Option<TlsFiles>, BackendError> {
        TlsFiles::from_flags(
            "--zk-tls",
            self.zk_tls_ca.as_deref(),
            self.zk_tls_cert.as_deref(),
            self.zk_tls_key.as_deref(),
        )
    }

    /// The SASL user these flags give, if any, with its password read.
    ///
    /// # Errors
    /// The password file cannot be read or is empty.
    pub fn sasl(&self) -> Result<Option<Credentials>, BackendError> {
        credentials(
            self.zk_sasl_user.as_deref(),
            self.zk_sasl_password_file.as_ref(),
            "--zk-sasl-password-file",
        )
    }
}

/// TLS and a user to etcd (of `run`, `serve` and `status`).
#[derive(Debug, Args, Default)]
pub struct EtcdSecurityArgs {
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

impl EtcdSecurityArgs {
    /// The TLS settings these flags give, if any.
    ///
    /// # Errors
    /// An incomplete set of TLS flags, named.
    pub fn tls(&self) -> Result<Option<TlsFiles>, BackendError> {
        TlsFiles::from_flags(
            "--etcd-tls",
            self.etcd_tls_ca.as_deref(),
            self.etcd_tls_cert.as_deref(),
            self.etcd_tls_key.as_deref(),
        )
    }

    /// The user these flags give, if any, with its password read.
    ///
    /// # Errors
    /// The password file cannot be read or is empty.
    pub fn credentials(&self) -> Result<Option<Credentials>, BackendError> {
        credentials(
            self.etcd_user.as_deref(),
            self.etcd_password_file.as_ref(),
            "--etcd-password-file",
        )
    }
}

fn credentials(
    user: Option<&str>,
    password_file: Option<&PathBuf>,
    flag: &str,
) -> Result<Option<Credentials>, BackendError> {
    match (user, password_file) {
        (Some(user), Some(file)) => Credentials::from_file(user, file, flag).map(Some),
        // clap's `requires` keeps one from coming without the other.
        _ => Ok(None),
    }
}
