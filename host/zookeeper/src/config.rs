//! How to reach ZooKeeper and where wardlock's locks live there.

use std::time::Duration;

use crate::recipe::dialect::Dialect;
use wardlock_backend::BackendError;
use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::name::LockName;
use wardlock_backend::secret::Secret;
use wardlock_backend::tls::{Credentials, TlsFiles};

/// Most ZooKeeper sessions one host may spread its locks over.
pub(crate) const MAX_SESSIONS: usize = 64;

/// The sessions `wardlock run` and `serve` open on demand by default
/// (`--zk-sessions auto`): with 64 guests on 64 names, one session made
/// 0.49 × the acquisitions per second of 64 raw sessions, 4 made 0.85–0.92 ×,
/// 8 made 0.97–1.10 × and 16 no more (`wardlock-bench --workloads spread
/// --clients 64 --no-lock-cache --zk-sessions N`; tests/BENCHMARKS.md).
pub const AUTO_SESSIONS: usize = 8;

/// Default ZooKeeper session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Configuration of a [`super::ZooKeeperBackend`].
#[derive(Debug, Clone)]
pub struct ZooKeeperConfig {
    /// `HOST:PORT[,HOST:PORT...]`.
    pub hosts: String,
    /// Absolute path under which lock names live: a lock named `a/b` is the
    /// ZooKeeper node `<root>/a/b`. Default `/wardlock`.
    pub root: String,
    /// ZooKeeper session timeout (the safety net if this whole host dies).
    pub session_timeout: Duration,
    /// `user:password` for digest authentication. When set, wardlock's nodes get
    /// the `creator_all` ACL, so other ZooKeeper users cannot delete them.
    /// Redacted in every printout of the configuration.
    pub digest_auth: Option<Secret>,
    /// Describes this host in lock node data (shown by status tools).
    pub host_description: String,
    /// Node naming and ordering, to share lock paths with Curator or kazoo.
    pub dialect: Dialect,
    /// Host-local hand-off: the guests of this host queue once per lock and pass
    /// the grant among themselves in memory (`None`: every guest queues on its
    /// own). Off by default in the library; `wardlock run`/`serve` turn it on.
    pub local_handoff: Option<LocalHandoff>,
    /// ZooKeeper sessions per host (default 1). Each lock name uses one of them
    /// (by hash), so one session's strict request order does not serialise
    /// unrelated locks.
    pub sessions: usize,
    /// Open each of the `sessions` only when a lock name of it is first used
    /// (see [`ZooKeeperConfig::sessions_on_demand`]); `false`: all of them
    /// at once.
    pub on_demand: bool,
    /// TLS to the ensemble (`--zk-tls-ca`, `--zk-tls-cert`, `--zk-tls-key`):
    /// every host of `hosts` is reached over TLS (its `secureClientPort`).
    pub tls: Option<TlsFiles>,
    /// SASL DIGEST-MD5 (`--zk-sasl-user`, `--zk-sasl-password-file`): the
    /// user of the server's JAAS `Server` section.
    pub sasl: Option<Credentials>,
}

impl ZooKeeperConfig {
    /// Defaults for `hosts`: root `/wardlock`, 10 s sessions, no auth.
    pub fn new(hosts: impl Into<String>) -> Self {
        ZooKeeperConfig {
            hosts: hosts.into(),
            root: "/wardlock".to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            digest_auth: None,
            host_description: default_host_description(),
            dialect: Dialect::default(),
            local_handoff: None,
            sessions: 1,
            on_demand: false,
            tls: None,
            sasl: None,
        }
    }

    /// Connects over TLS with these files.
    pub fn tls(mut self, tls: Option<TlsFiles>) -> Self {
        self.tls = tls;
        self
    }

    /// Authenticates with SASL DIGEST-MD5 as this user.
    pub fn sasl(mut self, sasl: Option<Credentials>) -> Self {
        self.sasl = sasl;
        self
    }

    /// Spreads lock names over `sessions` ZooKeeper sessions, all opened
    /// when the backend connects.
    pub fn sessions(mut self, sessions: usize) -> Self {
        self.sessions = sessions;
        self.on_demand = false;
        self
    }

    /// Spreads lock names over up to `most` ZooKeeper sessions, each opened
    /// the first time a lock name of it is used: a host that locks one name
    /// keeps one session, a host busy on many names gets `most` (what
    /// `--zk-sessions auto` does, with [`AUTO_SESSIONS`]). The backend's
    /// health is the worst of the sessions opened so far (the first always
    /// counts).
    pub fn sessions_on_demand(mut self, most: usize) -> Self {
        self.sessions = most;
        self.on_demand = true;
        self
    }

    /// Turns host-local hand-off on with `limits`.
    pub fn local_handoff(mut self, limits: LocalHandoff) -> Self {
        self.local_handoff = Some(limits);
        self
    }

    /// Sets the root path.
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// Sets the session timeout.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the node naming dialect.
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// Enables digest authentication with `user:password`.
    pub fn digest_auth(mut self, credentials: impl Into<String>) -> Self {
        self.digest_auth = Some(Secret::new(credentials));
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the bad setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.hosts.trim().is_empty() {
            return Err(ConfigError::NoHosts);
        }
        let root_ok = self.root == "/"
            || (self.root.starts_with('/') && LockName::new(&self.root[1..]).is_ok());
        if !root_ok {
            return Err(ConfigError::Root(self.root.clone()));
        }
        if let Some(auth) = &self.digest_auth
            && !auth.expose().contains(':')
        {
            return Err(ConfigError::DigestAuth);
        }
        if !(1..=MAX_SESSIONS).contains(&self.sessions) {
            return Err(ConfigError::Sessions(self.sessions));
        }
        Ok(())
    }

    /// The ZooKeeper path of lock `name`.
    pub fn lock_path(&self, name: &LockName) -> String {
        if self.root == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.root)
        }
    }
}

/// A [`ZooKeeperConfig`] that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `hosts` is empty.
    #[error("no ZooKeeper hosts given (expected HOST:PORT[,HOST:PORT...])")]
    NoHosts,
    /// `root` is not an absolute path of valid segments.
    #[error(
        "root {0:?} must be an absolute ZooKeeper path like /wardlock (segments of A-Z a-z 0-9 - _ .)"
    )]
    Root(String),
    /// `digest_auth` is not `user:password`.
    #[error("digest auth must be user:password")]
    DigestAuth,
    /// `sessions` is 0 or above 64.
    #[error("sessions must be 1 to {MAX_SESSIONS}, got {0}")]
    Sessions(usize),
}

impl From<ConfigError> for BackendError {
    fn from(error: ConfigError) -> Self {
        BackendError::InvalidConfig(error.to_string())
    }
}

fn default_host_description() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown-host".to_owned());
    format!("{host} pid {}", std::process::id())
}
