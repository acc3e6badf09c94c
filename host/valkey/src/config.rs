//! How a host reaches Valkey or Redis, and what it accepts of it.

use std::time::Duration;

use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::secret::Secret;
use wardlock_backend::tls::TlsFiles;

/// The session timeout when none is given: how long after a host goes
/// silent its session key expires on the server.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The root when none is given: lock `NAME` is the key `/wardlock/NAME`,
/// the key redis-py's `Lock('/wardlock/NAME')` takes.
pub const DEFAULT_ROOT: &str = "/wardlock";

/// How much longer than a session timeout a wait outlasts an outage when
/// the primary is found through Sentinel: long enough for a failover (the
/// Sentinels' `down-after-milliseconds`, their vote, the promotion) at its
/// usual settings. A waiter holds nothing, so waiting on is safe.
pub const SENTINEL_FAILOVER_ALLOWANCE: Duration = Duration::from_secs(15);

/// The shortest session timeout: the heartbeat runs every tenth of it, and a
/// server's expiry is only as fine as a millisecond.
const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(500);

/// A Valkey/Redis backend's configuration.
#[derive(Debug, Clone)]
pub struct ValkeyConfig {
    pub(crate) url: String,
    pub(crate) root: String,
    pub(crate) session_timeout: Duration,
    pub(crate) local_handoff: LocalHandoff,
    pub(crate) password: Option<Secret>,
    pub(crate) accept_unsafe: bool,
    pub(crate) tls: Option<TlsFiles>,
    /// The Sentinels (`HOST:PORT` each) and the name they monitor the
    /// primary under.
    pub(crate) sentinel: Option<(Vec<String>, String)>,
}

impl ValkeyConfig {
    /// Locks on the server at `url` (`redis://[USER@]HOST:PORT[/DB]`), under
    /// [`DEFAULT_ROOT`], with [`DEFAULT_SESSION_TIMEOUT`], host-local
    /// hand-off without lock caching (redis-py waiters are invisible to a
    /// host, so a cached lock would keep them waiting), no password and the
    /// server's settings checked.
    pub fn new(url: impl Into<String>) -> Self {
        ValkeyConfig {
            url: url.into(),
            root: DEFAULT_ROOT.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            // No linger: no lock caching.
            local_handoff: LocalHandoff::default(),
            password: None,
            accept_unsafe: false,
            tls: None,
            sentinel: None,
        }
    }

    /// Where lock names live: lock `NAME` is the key `ROOT/NAME`.
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// How long after this host goes silent its session (and every lock it
    /// holds or queued for) ends on the server.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How far the host hands a lock among its own guests
    /// ([`LocalHandoff::NONE`]: never; every guest queues on the server).
    pub fn local_handoff(mut self, handoff: LocalHandoff) -> Self {
        self.local_handoff = handoff;
        self
    }

    /// The password (of the URL's user, or of `default`), read from a file
    /// by the command line: never part of the URL.
    pub fn password(mut self, password: Option<Secret>) -> Self {
        self.password = password;
        self
    }

    /// TLS files for a `rediss://` URL: the CA the server's certificate must
    /// chain to (and name the URL's host), and a client certificate for a
    /// server that asks for one (`tls-auth-clients yes`). Without them a
    /// `rediss://` URL trusts the system's CA certificates.
    pub fn tls(mut self, tls: Option<TlsFiles>) -> Self {
        self.tls = tls;
        self
    }

    /// Finds the primary through Valkey/Redis Sentinel: `sentinels`
    /// (`HOST:PORT` each) monitor it as `master`. The URL then gives the
    /// scheme, the user and the database; its host and port are not used.
    /// A host connects to the primary a majority of the Sentinels names, and
    /// a renewal of its session counts only while a majority still names
    /// it: after a failover every grant is `lost`, and the new primary
    /// grants nothing for a session timeout.
    pub fn sentinel(mut self, sentinels: Vec<String>, master: impl Into<String>) -> Self {
        self.sentinel = Some((sentinels, master.into()));
        self
    }

    /// How long a wait outlasts an outage before it fails `unavailable`:
    /// a session timeout, plus [`SENTINEL_FAILOVER_ALLOWANCE`] with
    /// Sentinel.
    pub(crate) fn outage_allowance(&self) -> Duration {
        match self.sentinel {
            None => self.session_timeout,
            Some(_) => self.session_timeout + SENTINEL_FAILOVER_ALLOWANCE,
        }
    }

    /// Whether the URL asks for TLS (`rediss://`, `valkeys://`).
    pub fn uses_tls(&self) -> bool {
        matches!(scheme(&self.url), "rediss" | "valkeys")
    }

    /// Runs on a server whose settings cannot keep locks safe (an eviction
    /// policy, no persistence): the host says so at start and in
    /// `/healthz`. Off by default: such a server is refused.
    pub fn accept_unsafe(mut self, accept: bool) -> Self {
        self.accept_unsafe = accept;
        self
    }

    /// Whether the server's unsafe settings are accepted.
    pub fn accepts_unsafe(&self) -> bool {
        self.accept_unsafe
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The root lock names live under.
    pub fn root_path(&self) -> &str {
        &self.root
    }

    /// Checks what can be checked without the server.
    ///
    /// # Errors
    /// [`ConfigError`] naming what is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match scheme(&self.url) {
            "redis" | "valkey" => {
                if self.tls.is_some() {
                    return Err(ConfigError::TlsWithoutRediss(self.url.clone()));
                }
            }
            "rediss" | "valkeys" => {}
            _ => return Err(ConfigError::Scheme(self.url.clone())),
        }
        if self.url.contains("#insecure") {
            return Err(ConfigError::Insecure);
        }
        if url_password(&self.url) {
            return Err(ConfigError::PasswordInUrl);
        }
        if let Some((sentinels, master)) = &self.sentinel {
            if master.is_empty() {
                return Err(ConfigError::Sentinel(
                    "--redis-sentinel-master NAME: the name the Sentinels monitor the primary under is empty".into(),
                ));
            }
            if sentinels.is_empty() {
                return Err(ConfigError::Sentinel(
                    "--redis-sentinel names no Sentinel".into(),
                ));
            }
            for address in sentinels {
                let valid = address
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
                if !valid {
                    return Err(ConfigError::Sentinel(format!(
                        "--redis-sentinel {address:?} is not HOST:PORT"
                    )));
                }
            }
        }
        if !self.root.starts_with('/') || self.root.len() < 2 || self.root.ends_with('/') {
            return Err(ConfigError::Root(self.root.clone()));
        }
        if self.session_timeout < MIN_SESSION_TIMEOUT {
            return Err(ConfigError::SessionTimeout(self.session_timeout));
        }
        Ok(())
    }
}

/// The URL's scheme (`redis`, `rediss`, …), or `""` without one.
fn scheme(url: &str) -> &str {
    url.split_once("://").map_or("", |(scheme, _)| scheme)
}

/// Whether `url` carries a password (`redis://user:secret@host`).
fn url_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// A configuration the engine cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Not a `redis://` or `rediss://` URL.
    #[error(
        "--redis {0:?} is not a redis:// or rediss:// URL (redis://[USER@]HOST:PORT[/DB]; rediss:// for TLS)"
    )]
    Scheme(String),
    /// TLS files given for a plaintext URL.
    #[error(
        "--redis-tls-ca was given, but --redis {0:?} is a plaintext URL: write rediss:// for TLS"
    )]
    TlsWithoutRediss(String),
    /// `#insecure`: any certificate for any name accepted.
    #[error(
        "--redis: the URL's #insecure would accept any server's certificate, so anyone on the path could answer for the server: drop it and give --redis-tls-ca FILE"
    )]
    Insecure,
    /// A password written into the URL.
    #[error(
        "--redis: the URL carries a password, where process listings and logs show it; give it with --redis-password-file FILE"
    )]
    PasswordInUrl,
    /// Sentinel settings that cannot work (the sentence says which).
    #[error("{0}")]
    Sentinel(String),
    /// A root that is not an absolute path.
    #[error("--root {0:?}: the root must start with '/' and not end with one (e.g. /wardlock)")]
    Root(String),
    /// A session timeout too short to heartbeat.
    #[error("--session-timeout {0:?} is too short for the Valkey/Redis engine: at least 0.5 s")]
    SessionTimeout(Duration),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_cannot_work() {
        let ok = ValkeyConfig::new("redis://127.0.0.1:6379");
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(
            ValkeyConfig::new("http://x").validate(),
            Err(ConfigError::Scheme("http://x".into()))
        );
        assert_eq!(ValkeyConfig::new("rediss://x:1").validate(), Ok(()));
        assert!(ValkeyConfig::new("rediss://x:1").uses_tls());
        assert!(!ok.uses_tls());
        assert_eq!(
            ValkeyConfig::new("redis://x:1")
                .tls(Some(TlsFiles::new("--redis-tls", "ca.pem")))
                .validate(),
            Err(ConfigError::TlsWithoutRediss("redis://x:1".into()))
        );
        assert_eq!(
            ValkeyConfig::new("redis://u:p@x:1/0").validate(),
            Err(ConfigError::PasswordInUrl)
        );
        assert_eq!(ValkeyConfig::new("redis://u@x:1/0").validate(), Ok(()));
        assert_eq!(
            ValkeyConfig::new("rediss://x:1/#insecure").validate(),
            Err(ConfigError::Insecure)
        );
        assert!(ok.clone().root("wardlock").validate().is_err());
        let sentinels = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(
            ok.clone()
                .sentinel(sentinels(&["s1:26379", "10.0.0.2:26379"]), "mymaster")
                .validate(),
            Ok(())
        );
        assert!(
            ok.clone()
                .sentinel(sentinels(&["s1"]), "m")
                .validate()
                .is_err()
        );
        assert!(
            ok.clone()
                .sentinel(sentinels(&["s1:1"]), "")
                .validate()
                .is_err()
        );
        assert!(ok.clone().root("/w/").validate().is_err());
        assert!(
            ok.session_timeout(Duration::from_millis(100))
                .validate()
                .is_err()
        );
    }
}
