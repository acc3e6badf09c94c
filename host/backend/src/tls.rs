//! What every remote engine needs to reach a secured lock service: PEM files
//! for TLS (a CA to verify the server, optionally a client certificate and
//! key for mutual TLS) and a user with a password read from a file.
//!
//! Engine-neutral: the ZooKeeper and etcd backends each turn a [`TlsFiles`]
//! into their client's TLS options. Files are read when the backend connects,
//! so a renewed certificate is picked up by the next connection; a missing or
//! unreadable file is an error naming the flag that gave it.

use std::path::{Path, PathBuf};

use crate::BackendError;
use crate::secret::Secret;

/// PEM files for TLS to a lock service, and the flag family that named them
/// (`--zk-tls`, `--etcd-tls`), so errors say which flag to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificate(s) the server's certificate must chain to.
    pub ca: PathBuf,
    /// A client certificate and its private key, for servers that require
    /// one (mutual TLS).
    pub identity: Option<(PathBuf, PathBuf)>,
    /// The flags' common prefix: `--zk-tls` for `--zk-tls-ca` and so on
    /// (in serve's config file `BACKEND.tls` for `BACKEND.tls_ca`).
    pub flag: String,
}

/// The contents of [`TlsFiles`]. The key is a [`Secret`]: never printed.
#[derive(Debug, Clone)]
pub struct TlsPem {
    /// The CA certificate(s), PEM.
    pub ca: String,
    /// The client certificate (PEM) and its key (PEM).
    pub identity: Option<(String, Secret)>,
}

impl TlsFiles {
    /// Server verification against `ca` only (no client certificate).
    pub fn new(flag: impl Into<String>, ca: impl Into<PathBuf>) -> Self {
        TlsFiles {
            ca: ca.into(),
            identity: None,
            flag: flag.into(),
        }
    }

    /// Adds a client certificate and key (mutual TLS).
    pub fn identity(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.identity = Some((cert.into(), key.into()));
        self
    }

    /// Builds the settings from optional flags: `None` without any; an error
    /// naming the missing flag when a certificate comes without its key (or
    /// the reverse), or either without a CA.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] naming the flag.
    pub fn from_flags(
        flag: &str,
        ca: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Option<Self>, BackendError> {
        let missing = |what: &str, given: &str| {
            BackendError::InvalidConfig(format!(
                "{} needs {} FILE too",
                setting(flag, given),
                setting(flag, what)
            ))
        };
        match (ca, cert, key) {
            (None, None, None) => Ok(None),
            (None, Some(_), _) => Err(missing("ca", "cert")),
            (None, None, Some(_)) => Err(missing("ca", "key")),
            (Some(_), Some(_), None) => Err(missing("key", "cert")),
            (Some(_), None, Some(_)) => Err(missing("cert", "key")),
            (Some(ca), None, None) => Ok(Some(TlsFiles::new(flag, ca))),
            (Some(ca), Some(cert), Some(key)) => {
                Ok(Some(TlsFiles::new(flag, ca).identity(cert, key)))
            }
        }
    }

    /// Reads the files.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] naming the flag and the path of a file
    /// that cannot be read or holds no PEM block.
    pub fn read(&self) -> Result<TlsPem, BackendError> {
        let ca = self.read_pem("ca", &self.ca)?;
        let identity = match &self.identity {
            None => None,
            Some((cert, key)) => Some((
                self.read_pem("cert", cert)?,
                Secret::new(self.read_pem("key", key)?),
            )),
        };
        Ok(TlsPem { ca, identity })
    }

    fn read_pem(&self, which: &str, path: &Path) -> Result<String, BackendError> {
        let setting = setting(&self.flag, which);
        let text = std::fs::read_to_string(path).map_err(|e| {
            BackendError::InvalidConfig(format!(
                "{setting} {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        if !text.contains("-----BEGIN ") {
            return Err(BackendError::InvalidConfig(format!(
                "{setting} {}: not a PEM file (no -----BEGIN line)",
                path.display()
            )));
        }
        Ok(text)
    }
}

/// The name of one of the settings of the family `flag`: `--zk-tls-ca` for
/// flags, `BACKEND.tls_ca` in a config file.
pub fn setting(flag: &str, which: &str) -> String {
    if flag.starts_with("--") {
        format!("{flag}-{which}")
    } else {
        format!("{flag}_{which}")
    }
}

/// A user name and its password, for services that authenticate clients
/// (ZooKeeper SASL DIGEST-MD5, etcd's users).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name (not secret: it is shown in status output and logs).
    pub user: String,
    /// The password, read from a file.
    pub password: Secret,
}

impl Credentials {
    /// `user` with the password in `password_file` (its text without the
    /// trailing newline).
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] naming `flag` (the password file's
    /// flag) when the file cannot be read or is empty.
    pub fn from_file(user: &str, password_file: &Path, flag: &str) -> Result<Self, BackendError> {
        if user.is_empty() {
            return Err(BackendError::InvalidConfig(format!(
                "{flag} needs a user name beside it"
            )));
        }
        let password = Secret::from_file(password_file)
            .map_err(|e| BackendError::InvalidConfig(format!("{flag}: {e}")))?;
        Ok(Credentials {
            user: user.to_owned(),
            password,
        })
    }

    /// The user of a pair of flags (a user and its password file), read when
    /// both are given; `None` when neither is (the flags' `requires` keeps one
    /// from coming without the other).
    ///
    /// # Errors
    /// As [`Credentials::from_file`].
    pub fn from_flags(
        user: Option<&str>,
        password_file: Option<&Path>,
        flag: &str,
    ) -> Result<Option<Self>, BackendError> {
        match (user, password_file) {
            (Some(user), Some(file)) => Credentials::from_file(user, file, flag).map(Some),
            _ => Ok(None),
        }
    }
}

/// Makes `ring` the process's rustls crypto provider, once. rustls needs
/// exactly one: wasmtime-wasi-http brings `ring`, the ZooKeeper client's
/// rustls `aws-lc-rs`, and a client that asks rustls for "the default"
/// with both compiled in would panic.
pub fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Err: an embedder installed one already, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What to check when TLS to a service fails, for the flag family `flag`
/// (`--zk-tls`, `--etcd-tls`).
pub fn tls_flags_hint(flag: &str) -> String {
    format!(
        "check {flag}-ca (the CA that signed the server's certificate) and, if the server requires client certificates, {flag}-cert and {flag}-key"
    )
}

/// Walks an error and its sources into one line (clients wrap the cause of
/// a TLS or authentication failure several levels deep).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_come_in_whole_sets_and_bad_files_are_named() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(TlsFiles::from_flags("--x-tls", None, None, None), Ok(None));
        let half = TlsFiles::from_flags("--x-tls", Some(&p("ca")), Some(&p("c")), None);
        assert!(half.is_err_and(|e| e.to_string().contains("--x-tls-cert needs --x-tls-key")));
        let no_ca = TlsFiles::from_flags("--x-tls", None, Some(&p("c")), Some(&p("k")));
        assert!(no_ca.is_err_and(|e| e.to_string().contains("--x-tls-ca")));

        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path();
        let not_pem = dir.join("ca.txt");
        std::fs::write(&not_pem, "hello").expect("write");
        let files = TlsFiles::new("--x-tls", &not_pem);
        let error = files.read().expect_err("not PEM").to_string();
        assert!(
            error.contains("--x-tls-ca") && error.contains("not a PEM"),
            "{error}"
        );
        let missing = TlsFiles::new("--x-tls", dir.join("missing.pem"));
        let error = missing.read().expect_err("missing").to_string();
        assert!(
            error.contains("--x-tls-ca") && error.contains("missing.pem"),
            "{error}"
        );

        let password = dir.join("password");
        std::fs::write(&password, "s3cret\n").expect("write");
        let credentials = Credentials::from_file("alice", &password, "--x-password-file");
        let credentials = credentials.expect("read");
        assert_eq!(credentials.password.expose(), "s3cret");
        assert!(!format!("{credentials:?}").contains("s3cret"));
    }
}
