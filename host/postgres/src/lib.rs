//! The PostgreSQL engine: wardlock's locks on advisory locks, sharing keys
//! with sqlx's `PgAdvisoryLock` (see `key`), fair queues from PostgreSQL's
//! own lock manager (see `recipe`), fencing tokens from a sequence that
//! survives restarts (see `schema`), a session clock per connection that
//! tells a holder `lost` no later than the server can free its lock (see
//! `conn`), a bounded set of connections per host (see `pool`), and
//! host-local hand-off for every lock (`wardlock_backend::handoff`): a host
//! holds one advisory lock per name and passes the grant among its guests
//! in memory.
//!
//! ```no_run
//! use wardlock_backend::name::LockName;
//! use wardlock_backend::{LockBackend, Mode};
//! use wardlock_postgres::{PostgresBackend, PostgresConfig};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = PostgresConfig::new("postgres://wardlock@127.0.0.1/wardlock");
//! let backend = PostgresBackend::connect(config).await?;
//! let session = backend.open_session("an example");
//! let grant = session
//!     .acquire(&LockName::new("orders")?, Mode::Exclusive, None)
//!     .await?;
//! println!("held, fencing token {}", grant.token);
//! # Ok(())
//! # }
//! ```
//!
//! The guarded store (`guarded`) is a table in wardlock's schema, each write
//! one statement on the holding connection that checks `pg_locks` first.
//! Semaphores, revocation and elections answer `Unsupported`.

mod config;
mod conn;
mod errors;
mod guarded;
mod handoff_nodes;
mod inspect;
mod key;
mod keyvalue;
mod pool;
mod pooler;
mod recipe;
mod registration;
mod schema;
mod session;
mod tls;

use std::sync::Arc;

pub use config::{DEFAULT_SESSION_TIMEOUT, DEFAULT_WAIT_CONNECTIONS, PostgresConfig};
pub use key::advisory_key;
pub use registration::POSTGRES_ENGINE;

/// The Postgres engine's name: `--backend postgres`, `kind = "postgres"`,
/// and the [`LockBackend::kind`] of its backends.
pub const NAME: &str = "postgres";

use conn::Connector;
use pool::Pool;
use schema::Schema;
use wardlock_backend::handoff::LocalLocks;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Health, LockBackend, LockSession};

/// State shared by every guest session of a backend.
pub(crate) struct Shared {
    pub(crate) config: PostgresConfig,
    pub(crate) pool: Pool,
    pub(crate) schema: Schema,
    /// Host-local hand-off tasks, by lock name.
    pub(crate) local_locks: LocalLocks,
    pub(crate) runtime: tokio::runtime::Handle,
}

/// Locks in PostgreSQL. Cheap to share: clone the `Arc` it is used through.
pub struct PostgresBackend {
    shared: Arc<Shared>,
}

impl PostgresBackend {
    /// A backend that connects on the first lock request.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] for a configuration
    /// [`PostgresConfig::validate`] rejects or TLS files that cannot be read;
    /// [`BackendError::Unsupported`] outside a tokio runtime.
    pub fn new(config: PostgresConfig) -> Result<Self, BackendError> {
        let target = config.target()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            BackendError::Unsupported(
                "the Postgres backend must be created inside a tokio runtime".into(),
            )
        })?;
        let (tls, ssl_mode) = tls::connector(target.tls.as_ref())?;
        let mut client = target.client;
        client.ssl_mode(ssl_mode);
        if let Some(password) = &config.password {
            client.password(password.expose());
        }
        let schema = Schema::new(&config.schema);
        let connector = Connector {
            named: client.get_application_name().is_some(),
            client,
            tls,
            session_timeout: config.session_timeout,
            connect_timeout: config.connect_timeout,
            schema: schema.clone(),
        };
        let shared = Arc::new(Shared {
            pool: Pool::new(connector, config.wait_connections),
            schema,
            config,
            local_locks: LocalLocks::default(),
            runtime,
        });
        Ok(PostgresBackend { shared })
    }

    /// A backend with its main connection open, so a wrong address, a
    /// refused login, a role without the rights wardlock needs or a pooler
    /// in transaction mode is reported now.
    ///
    /// # Errors
    /// As [`PostgresBackend::new`]; [`BackendError::Refused`] for a login,
    /// rights or a pooler the engine cannot work with (naming the cause);
    /// [`BackendError::Unavailable`] when the server cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn connect(config: PostgresConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        backend.shared.pool.main().await?;
        Ok(backend)
    }

    /// A backend that connects now if it can and otherwise keeps trying on
    /// each lock request.
    ///
    /// # Errors
    /// As [`PostgresBackend::new`]; a refusal retrying cannot fix (a login,
    /// rights, a pooler); never for an unreachable server.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn start(config: PostgresConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        match backend.shared.pool.main().await {
            Ok(_) => {}
            Err(error @ (BackendError::Refused(_) | BackendError::InvalidConfig(_))) => {
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(%error, "starting without PostgreSQL; connecting on the next lock request");
            }
        }
        Ok(backend)
    }

    /// The configuration.
    pub fn config(&self) -> &PostgresConfig {
        &self.shared.config
    }

    /// How many of this host's guests hold or wait for `name` (they share
    /// the host's one advisory lock for it).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn local_contenders(&self, name: &LockName) -> usize {
        self.shared.local_locks.contenders(name).await
    }

    /// What `name`'s hand-off task holds, queues and waits for, read from its
    /// state (for a test's message when a wait runs past its bound).
    pub fn describe_local(&self, name: &LockName) -> String {
        self.shared.local_locks.describe(name)
    }

    /// How many server connections this host has open for locks now (at
    /// most `1 + wait_connections`).
    pub fn open_connections(&self) -> usize {
        self.shared.pool.open_connections()
    }

    /// The server process of the main connection, if one is open (tests
    /// terminate it to check loss).
    pub fn main_backend_pid(&self) -> Option<i32> {
        self.shared
            .pool
            .current_main()
            .filter(|c| !c.is_over())
            .map(|c| c.pid)
    }
}

impl LockBackend for PostgresBackend {
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(session::PgLockSession::new(self.shared.clone()))
    }

    fn kind(&self) -> &'static str {
        NAME
    }

    /// The advisory key (`pg_advisory_lock(KEY)`).
    fn location(&self, name: &LockName) -> Option<String> {
        Some(format!("advisory key {}", advisory_key(name)))
    }

    fn health(&self) -> Health {
        let pool = &self.shared.pool;
        let main = pool.current_main().map(|c| c.health());
        wardlock_backend::liveness::backend_health(main, pool.is_unreachable())
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.shared.local_locks.drop_caches();
        Box::pin(self.shared.pool.close())
    }
}
