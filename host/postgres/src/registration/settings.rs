//! The Postgres engine's own settings: each a flag of `run`, `serve` and
//! `status` and a key of a config file's `kind = "postgres"` entry.

use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::registry::{Mistake, Setting, SettingKind, Settings};
use wardlock_backend::secret::Secret;

use crate::PostgresConfig;

/// The environment variable libpq reads a password from.
const PASSWORD_ENV: &str = "PGPASSWORD";

/// The Postgres engine's settings (the shared remote ones come on top).
pub(super) const SETTINGS: &[Setting] = &[
    Setting::new("url", "postgres", SettingKind::Text)
        .value_name("URL")
        .chooses()
        .help("PostgreSQL URL, postgres://ROLE@HOST:PORT/DATABASE[?sslmode=verify-full&sslrootcert=CA.pem&sslcert=…&sslkey=…]: chooses the Postgres engine. A lock NAME is the advisory lock of sqlx's PgAdvisoryLock::new(NAME) (`wardlock status` prints its key); --session-timeout is how long after this host goes silent the server ends its connections. The password comes from --postgres-password-file or PGPASSWORD, never the URL."),
    Setting::new("password_file", "postgres-password-file", SettingKind::Path)
        .value_name("FILE")
        .help("A file holding the role's password (one line); without it, the PGPASSWORD environment variable, if set."),
    Setting::new("tls_ca", "postgres-tls-ca", SettingKind::Path)
        .value_name("FILE")
        .help("Connect over TLS (sslmode=verify-full), trusting the server certificates this CA file (PEM) signed; the same as sslrootcert in the URL."),
    Setting::new("tls_cert", "postgres-tls-cert", SettingKind::Path)
        .value_name("FILE")
        .help("A client certificate (PEM), for servers whose pg_hba.conf asks for one (cert, clientcert=verify-full); with --postgres-tls-key."),
    Setting::new("tls_key", "postgres-tls-key", SettingKind::Path)
        .value_name("FILE")
        .help("The client certificate's private key (PEM)."),
    Setting::new("wait_connections", "postgres-wait-connections", SettingKind::Integer)
        .value_name("N")
        .default("16")
        .help("At most N server connections wait in lock queues at once (a waiting pg_advisory_lock occupies its connection); uncontended grants use the host's one main connection. A host opens at most 1 + N."),
    Setting::new("schema", "postgres-schema", SettingKind::Text)
        .value_name("SCHEMA")
        .default("wardlock")
        .help("The schema of wardlock's fencing-token sequence and guarded store (created if missing; the role needs CREATE on the database for that, or an administrator creates the schema for it)."),
];

/// The configuration `settings` describe. With hand-off off the host's
/// advisory lock goes after every local holder.
///
/// # Errors
/// The setting at fault and what is wrong.
pub(super) fn config(settings: &Settings) -> Result<PostgresConfig, Mistake> {
    if settings.given("root") {
        return Err(settings.mistake(
            "root",
            "the Postgres engine keeps locks in the database's advisory key space, shared with sqlx, where names have no root: drop it (use a database or a name prefix of your own)",
        ));
    }
    let password = match settings.secret_file("password_file")? {
        Some(password) => Some(password),
        None => std::env::var(PASSWORD_ENV)
            .ok()
            .filter(|p| !p.is_empty())
            .map(Secret::new),
    };
    let tls = settings.tls()?;
    // No lock caching unless asked for with --linger-ms: PostgreSQL tells a
    // holder nothing when someone queues behind it, so a cached lock would
    // keep another client (sqlx, psql) waiting until the next `pg_locks`
    // read of the host, not one notification.
    let mut handoff = settings.handoff()?.unwrap_or(LocalHandoff::NONE);
    if !settings.given("linger_ms") {
        handoff.linger = std::time::Duration::ZERO;
    }
    let mut config = PostgresConfig::new(&settings.required("url")?)
        .session_timeout(settings.session_timeout()?)
        .local_handoff(handoff)
        .password(password)
        .tls(tls);
    if let Some(count) = settings.integer("wait_connections")? {
        config = config.wait_connections(count);
    }
    if let Some(schema) = settings.text("schema")? {
        config = config.schema(schema);
    }
    config
        .validate()
        .map_err(|why| settings.mistake("url", why.to_string()))?;
    Ok(config)
}
