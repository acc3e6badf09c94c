//! How to reach etcd and where wardlock's locks live there.

use std::time::Duration;

use wardlock_backend::BackendError;
use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::tls::{Credentials, TlsFiles};

/// Default lease TTL (the time a dead host's locks stay held).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// Configuration of a [`super::EtcdBackend`].
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client endpoints, `HOST:PORT` (or `http://HOST:PORT`).
    pub endpoints: Vec<String>,
    /// Key prefix under which lock names live: the lock `a` is the prefix
    /// `<root>/a/`, which `etcdctl lock <root>/a` shares. Default `/wardlock`.
    pub root: String,
    /// The host lease's TTL, whole seconds (etcd's unit); at least 2 s.
    pub lease_ttl: Duration,
    /// Host-local hand-off limits. On etcd every host queues one key per
    /// lock (under its one lease), so its guests always pass the grant among
    /// themselves; `max_handoffs: 0` makes the host give the key up after
    /// every local holder instead (no local hand-off while others wait).
    pub local_handoff: LocalHandoff,
    /// How long one attempt to reach etcd may take before the service counts
    /// as unreachable.
    pub connect_timeout: Duration,
    /// TLS to the cluster (`--etcd-tls-ca`, `--etcd-tls-cert`,
    /// `--etcd-tls-key`): endpoints become `https://`.
    pub tls: Option<TlsFiles>,
    /// An etcd user (`--etcd-user`, `--etcd-password-file`), for clusters
    /// with `auth enable`; it needs read and write on the root's prefix.
    pub credentials: Option<Credentials>,
}

impl EtcdConfig {
    /// Defaults for `endpoints` (comma-separated): root `/wardlock`, 10 s lease.
    pub fn new(endpoints: &str) -> Self {
        EtcdConfig {
            endpoints: endpoints
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect(),
            root: "/wardlock".to_owned(),
            lease_ttl: DEFAULT_LEASE_TTL,
            local_handoff: LocalHandoff::default(),
            connect_timeout: Duration::from_secs(2),
            tls: None,
            credentials: None,
        }
    }

    /// Connects over TLS with these files.
    pub fn tls(mut self, tls: Option<TlsFiles>) -> Self {
        self.tls = tls;
        self
    }

    /// Authenticates as this user.
    pub fn credentials(mut self, credentials: Option<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// Sets the key prefix under which locks live.
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// Sets the lease TTL (rounded up to whole seconds).
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Sets the host-local hand-off limits.
    pub fn local_handoff(mut self, limits: LocalHandoff) -> Self {
        self.local_handoff = limits;
        self
    }

    /// The TTL in whole seconds, as etcd takes it.
    pub fn ttl_seconds(&self) -> i64 {
        let ms = self.lease_ttl.as_millis();
        i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
    }

    /// Checks what can be checked without etcd.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] naming the setting.
    pub fn validate(&self) -> Result<(), BackendError> {
        if self.endpoints.is_empty() {
            return Err(BackendError::InvalidConfig(
                "--etcd needs at least one HOST:PORT".into(),
            ));
        }
        if let Some(bad) = self.endpoints.iter().find(|e| !e.contains(':')) {
            return Err(BackendError::InvalidConfig(format!(
                "etcd endpoint {bad:?} is not HOST:PORT"
            )));
        }
        if self.lease_ttl < Duration::from_secs(2) {
            return Err(BackendError::InvalidConfig(format!(
                "the etcd lease TTL (--session-timeout) must be at least 2 s, not {:?}",
                self.lease_ttl
            )));
        }
        if self.tls.is_some()
            && let Some(plain) = self.endpoints.iter().find(|e| e.starts_with("http://"))
        {
            return Err(BackendError::InvalidConfig(format!(
                "etcd endpoint {plain:?} is plaintext but --etcd-tls-ca is given: drop the http:// (or write https://)"
            )));
        }
        if !self.root.starts_with('/') || self.root.ends_with('/') {
            return Err(BackendError::InvalidConfig(format!(
                "the etcd root {:?} must start with '/' and not end with one",
                self.root
            )));
        }
        Ok(())
    }

    /// The endpoints as URLs (`http://`, or `https://` with TLS, added when
    /// no scheme is given).
    pub(super) fn urls(&self) -> Vec<String> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        self.endpoints
            .iter()
            .map(|e| {
                if e.contains("://") {
                    e.clone()
                } else {
                    format!("{scheme}://{e}")
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_named() {
        let ok = EtcdConfig::new("127.0.0.1:2379, 127.0.0.1:2380");
        assert_eq!(ok.endpoints.len(), 2);
        assert!(ok.validate().is_ok());
        assert_eq!(ok.urls()[0], "http://127.0.0.1:2379");
        let err = |c: EtcdConfig| c.validate().expect_err("refused").to_string();
        assert!(err(EtcdConfig::new("")).contains("--etcd"));
        assert!(err(EtcdConfig::new("localhost")).contains("HOST:PORT"));
        assert!(err(ok.clone().lease_ttl(Duration::from_secs(1))).contains("2 s"));
        assert!(err(ok.clone().root("locks")).contains("'/'"));
        assert_eq!(ok.lease_ttl(Duration::from_millis(2500)).ttl_seconds(), 3);
    }
}
