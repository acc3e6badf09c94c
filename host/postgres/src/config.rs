//! How to reach PostgreSQL, how long a host's locks outlive its silence, and
//! how many connections a host may open.

use std::time::Duration;

use wardlock_backend::BackendError;
use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::secret::Secret;
use wardlock_backend::tls::TlsFiles;

/// Default session timeout: how long a silent host's locks stay held.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Default bound on the connections a host opens to wait in a queue (beside
/// its one main connection).
pub const DEFAULT_WAIT_CONNECTIONS: usize = 16;

/// The flag family of the TLS files (`--postgres-tls-ca`, …).
pub(crate) const TLS_FLAG: &str = "--postgres-tls";

/// Configuration of a [`super::PostgresBackend`].
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// The connection URL, `postgres://USER@HOST:PORT/DATABASE[?…]`, without
    /// a password (see [`PostgresConfig::password`]). `sslmode`,
    /// `sslrootcert`, `sslcert` and `sslkey` in its query are read as libpq
    /// reads them (see [`PostgresConfig::validate`]).
    pub url: String,
    /// The role's password: from `--postgres-password-file` or `PGPASSWORD`,
    /// never from the command line.
    pub password: Option<Secret>,
    /// TLS with server verification (`sslmode=verify-full`) and optionally a
    /// client certificate.
    pub tls: Option<TlsFiles>,
    /// How long after this host went silent the server ends its sessions
    /// (`idle_session_timeout` on each connection), freeing its locks; the
    /// host stops vouching for its grants sooner (see
    /// `wardlock_backend::liveness`). At least 1 s.
    pub session_timeout: Duration,
    /// Host-local hand-off limits (the host holds one advisory lock per name
    /// and passes the grant among its guests).
    pub local_handoff: LocalHandoff,
    /// At most this many connections wait in lock queues at once (a waiting
    /// `pg_advisory_lock` occupies its connection); a wait beyond it waits in
    /// the host for one. Uncontended grants take none: they are made on the
    /// main connection. At least 1.
    pub wait_connections: usize,
    /// The schema of wardlock's own objects: the fencing-token sequence, the
    /// server-start epoch and the guarded store. Default `wardlock`.
    pub schema: String,
    /// How long one attempt to connect may take.
    pub connect_timeout: Duration,
    /// How often a holding host with local waiters looks for another
    /// client's waiter behind its lock (`pg_locks`), for the hand-off
    /// fairness bound.
    pub contender_poll: Duration,
}

impl PostgresConfig {
    /// Defaults for `url`: 10 s session timeout, 16 wait connections,
    /// schema `wardlock`, no password, no TLS unless the URL asks for it.
    pub fn new(url: &str) -> Self {
        PostgresConfig {
            url: url.trim().to_owned(),
            password: None,
            tls: None,
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            local_handoff: LocalHandoff::default(),
            wait_connections: DEFAULT_WAIT_CONNECTIONS,
            schema: "wardlock".to_owned(),
            connect_timeout: Duration::from_secs(3),
            contender_poll: Duration::from_millis(5),
        }
    }

    /// Authenticates with this password.
    pub fn password(mut self, password: Option<Secret>) -> Self {
        self.password = password;
        self
    }

    /// Connects over TLS with these files (`sslmode=verify-full`).
    pub fn tls(mut self, tls: Option<TlsFiles>) -> Self {
        self.tls = tls;
        self
    }

    /// Sets the session timeout: a holder is told `lost` this long after the
    /// host last heard from the server, and the server ends a silent
    /// connection a fifth later. A grant that follows a server process which
    /// ended while it held or queued ahead (terminated, a killed host's) waits
    /// a tenth of it, so that process's host reads `lost` first.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the host-local hand-off limits.
    pub fn local_handoff(mut self, limits: LocalHandoff) -> Self {
        self.local_handoff = limits;
        self
    }

    /// Sets the bound on waiting connections.
    pub fn wait_connections(mut self, count: usize) -> Self {
        self.wait_connections = count;
        self
    }

    /// Sets the schema of wardlock's objects.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Checks what can be checked without a server, and reads the URL's TLS
    /// parameters into [`PostgresConfig::tls`].
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] naming what is wrong: a URL that is
    /// not `postgres://…` or carries a password, an `sslmode` wardlock does
    /// not offer (it verifies the server: `verify-full`, or `disable`), a
    /// certificate without its key, a session timeout under 1 s, no wait
    /// connection, a schema that is not a plain identifier.
    pub fn validate(&self) -> Result<(), BackendError> {
        self.target().map(|_| ())
    }

    /// The URL's parts: the client configuration and the TLS files.
    pub(crate) fn target(&self) -> Result<Target, BackendError> {
        let invalid = |why: String| BackendError::InvalidConfig(why);
        if !(self.url.starts_with("postgres://") || self.url.starts_with("postgresql://")) {
            return Err(invalid(format!(
                "--postgres {:?} is not a URL postgres://USER@HOST:PORT/DATABASE",
                redact(&self.url)
            )));
        }
        let (base, query) = match self.url.split_once('?') {
            Some((base, query)) => (base, query),
            None => (self.url.as_str(), ""),
        };
        let mut kept = Vec::new();
        let mut ssl = SslParams::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => ssl.mode = Some(value.to_owned()),
                "sslrootcert" => ssl.root = Some(value.to_owned()),
                "sslcert" => ssl.cert = Some(value.to_owned()),
                "sslkey" => ssl.key = Some(value.to_owned()),
                "password" => {
                    return Err(invalid(password_in_url()));
                }
                _ => kept.push(pair),
            }
        }
        let client_url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let client: tokio_postgres::Config = client_url
            .parse()
            .map_err(|e| invalid(format!("--postgres {:?}: {e}", redact(&self.url))))?;
        if client.get_password().is_some() {
            return Err(invalid(password_in_url()));
        }
        if client.get_user().is_none() {
            return Err(invalid(format!(
                "--postgres {:?} names no role: write postgres://ROLE@HOST:PORT/DATABASE",
                self.url
            )));
        }
        let tls = self.tls_of(ssl)?;
        if self.session_timeout < Duration::from_secs(1) {
            return Err(invalid(format!(
                "the Postgres session timeout (--session-timeout) must be at least 1 s, not {:?}",
                self.session_timeout
            )));
        }
        if self.wait_connections == 0 {
            return Err(invalid(
                "--postgres-wait-connections must be at least 1".into(),
            ));
        }
        let plain = !self.schema.is_empty()
            && self.schema.len() <= 63
            && self
                .schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !self.schema.starts_with(|c: char| c.is_ascii_digit());
        if !plain {
            return Err(invalid(format!(
                "--postgres-schema {:?} must be a plain lower-case identifier (a-z, 0-9, _; at most 63)",
                self.schema
            )));
        }
        Ok(Target { client, tls })
    }

    /// The TLS files the flags or the URL give; flags win.
    fn tls_of(&self, ssl: SslParams) -> Result<Option<TlsFiles>, BackendError> {
        let invalid = |why: String| BackendError::InvalidConfig(why);
        match ssl.mode.as_deref() {
            None | Some("verify-full") => {}
            Some("disable") => {
                if self.tls.is_some() {
                    return Err(invalid(format!(
                        "the URL says sslmode=disable but {TLS_FLAG}-ca is given: drop one"
                    )));
                }
                return Ok(None);
            }
            Some(other) => {
                return Err(invalid(format!(
                    "sslmode={other} is not offered: wardlock verifies the server it trusts with its locks. Use sslmode=verify-full with sslrootcert=CA.pem (or {TLS_FLAG}-ca), or sslmode=disable on a trusted network"
                )));
            }
        }
        if self.tls.is_some() {
            return Ok(self.tls.clone());
        }
        let Some(root) = ssl.root else {
            if ssl.mode.is_some() {
                return Err(invalid(format!(
                    "sslmode=verify-full needs the CA that signed the server's certificate: add sslrootcert=CA.pem to the URL (or {TLS_FLAG}-ca)"
                )));
            }
            if ssl.cert.is_some() || ssl.key.is_some() {
                return Err(invalid(
                    "sslcert/sslkey need sslrootcert (and sslmode=verify-full) in the URL".into(),
                ));
            }
            return Ok(None);
        };
        let files = TlsFiles::new("the URL's ssl", root);
        match (ssl.cert, ssl.key) {
            (None, None) => Ok(Some(files)),
            (Some(cert), Some(key)) => Ok(Some(files.identity(cert, key))),
            _ => Err(invalid(
                "the URL gives sslcert without sslkey (or the reverse): give both".into(),
            )),
        }
    }
}

/// The URL's TLS parameters, as libpq names them.
#[derive(Default)]
struct SslParams {
    mode: Option<String>,
    root: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

/// A validated configuration's client settings.
pub(crate) struct Target {
    /// tokio-postgres's configuration (without TLS parameters).
    pub(crate) client: tokio_postgres::Config,
    /// Server verification and client certificate, when TLS is used.
    pub(crate) tls: Option<TlsFiles>,
}

fn password_in_url() -> String {
    "the --postgres URL carries a password, which every user of this machine would see in `ps`: remove it and give it with --postgres-password-file FILE or the PGPASSWORD environment variable".into()
}

/// `url` with any password replaced, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:<redacted>@{host}")
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(config: PostgresConfig) -> String {
        config.validate().expect_err("refused").to_string()
    }

    #[test]
    fn a_plain_url_is_accepted() {
        let config = PostgresConfig::new("postgres://app@127.0.0.1:5432/app");
        let target = config.target().expect("valid");
        assert!(target.tls.is_none());
        assert_eq!(target.client.get_user(), Some("app"));
    }

    #[test]
    fn a_password_in_the_url_is_refused_without_showing_it() {
        let why = err(PostgresConfig::new("postgres://app:hunter2@127.0.0.1/app"));
        assert!(why.contains("--postgres-password-file"), "{why}");
        assert!(!why.contains("hunter2"), "{why}");
        let why = err(PostgresConfig::new(
            "postgres://app@127.0.0.1/app?password=hunter2",
        ));
        assert!(
            why.contains("PGPASSWORD") && !why.contains("hunter2"),
            "{why}"
        );
    }

    #[test]
    fn sslmodes_that_do_not_verify_the_server_are_refused() {
        for mode in ["require", "prefer", "verify-ca", "allow"] {
            let why = err(PostgresConfig::new(&format!(
                "postgres://app@db/app?sslmode={mode}&sslrootcert=/ca.pem"
            )));
            assert!(why.contains(&format!("sslmode={mode}")), "{why}");
            assert!(why.contains("verify-full"), "{why}");
        }
        let why = err(PostgresConfig::new(
            "postgres://app@db/app?sslmode=verify-full",
        ));
        assert!(why.contains("sslrootcert"), "{why}");
    }

    #[test]
    fn the_url_s_tls_files_are_read_as_libpq_names_them() {
        let config = PostgresConfig::new(
            "postgres://app@db/app?sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/k.pem&application_name=x",
        );
        let target = config.target().expect("valid");
        let tls = target.tls.expect("tls");
        assert_eq!(tls.ca, std::path::PathBuf::from("/ca.pem"));
        assert!(tls.identity.is_some());
        assert_eq!(target.client.get_application_name(), Some("x"));
        let why = err(PostgresConfig::new(
            "postgres://app@db/app?sslrootcert=/ca.pem&sslcert=/c.pem",
        ));
        assert!(why.contains("sslkey"), "{why}");
    }

    #[test]
    fn bad_settings_are_named() {
        let ok = PostgresConfig::new("postgres://app@db/app");
        assert!(err(PostgresConfig::new("db:5432")).contains("postgres://"));
        assert!(err(PostgresConfig::new("postgres://db/app")).contains("no role"));
        assert!(err(ok.clone().session_timeout(Duration::from_millis(500))).contains("1 s"));
        assert!(err(ok.clone().wait_connections(0)).contains("--postgres-wait-connections"));
        assert!(err(ok.clone().schema("Locks")).contains("--postgres-schema"));
        assert!(err(ok.schema("x; drop")).contains("--postgres-schema"));
    }
}
