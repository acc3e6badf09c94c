//! The Valkey and Redis engine: wardlock's locks on Valkey ≥ 7.2 or Redis ≥
//! 7.0, chosen with `--redis URL`.
//!
//! - **Fair queues, no herd** (`recipe`, `scripts`): a sorted set per lock,
//!   scored by fencing token; a release tells only the members it lets in,
//!   on their host's own channel (`wake`).
//! - **Sessions on the host's clock** (`session`): a key per host session
//!   with a time-to-live the host renews; the host tells a holder
//!   `suspended`, then `lost`, no later than the server can let the key
//!   expire, and a crashed host's locks pass within its session timeout
//!   (the next waiter looks again when the crashed holder's key would
//!   expire, not in a loop).
//! - **Tokens that never go backwards**: one counter per root; when a root
//!   is served by another server process than before (a restart, a
//!   failover), every session of the old one ends, no lock is granted for a
//!   session timeout, and the counter jumps by 2^32.
//! - **Refusals** (`safety`): an eviction policy other than `noeviction`,
//!   no persistence, a replica, cluster mode (unless the root has a hash
//!   tag whose slot the node serves), old versions; the first two
//!   may be accepted with [`ValkeyConfig::accept_unsafe`].
//! - **redis-py interop** (`layout`): lock `NAME` holds the key
//!   `ROOT/NAME` while granted, so redis-py's `Lock('ROOT/NAME')` and
//!   wardlock exclude each other.
//! - Host-local hand-off (`wardlock_backend::handoff`): a host queues one
//!   member per lock and passes the grant among its guests in memory.
//! - **Sentinel** (`sentinel`, [`ValkeyConfig::sentinel`]): the primary a
//!   majority of the Sentinels names, and a renewal counts only while a
//!   majority still names it; a failover ends every grant.
//! - **TLS and users** (`tls`): `rediss://` with the server's certificate
//!   and name verified ([`ValkeyConfig::tls`]), an ACL user in the URL and
//!   its password from a file ([`ValkeyConfig::password`]); a failed
//!   handshake is explained (which file to check).
//!
//! ```no_run
//! use wardlock_backend::name::LockName;
//! use wardlock_backend::{LockBackend, Mode};
//! use wardlock_valkey::{ValkeyBackend, ValkeyConfig};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = ValkeyBackend::connect(ValkeyConfig::new("redis://127.0.0.1:6379")).await?;
//! let session = backend.open_session("an example");
//! let grant = session
//!     .acquire(&LockName::new("orders")?, Mode::Exclusive, None)
//!     .await?;
//! println!("held, fencing token {}", grant.token);
//! # Ok(())
//! # }
//! ```
//!
//! The guarded store (`guarded`) is a hash per lock and the standard
//! `wasi:keyvalue` store (`keyvalue`) a hash per bucket, each write one
//! script that checks the writers' queue members first; the contenders list
//! is served. Leader election (`election`) and semaphores put members of
//! their own in the lock's queue (a candidate `e`, a permit `p`, see
//! `scripts`); revocation answers `Unsupported`.

mod config;
mod election;
mod guarded;
mod keyvalue;
mod layout;
mod link;
mod lock_session;
mod nodes;
mod recipe;
mod registration;
mod safety;
mod scripts;
mod sentinel;
mod session;
mod stamped;
mod tls;
mod wake;

use std::sync::{Arc, Mutex, MutexGuard};

use wardlock_backend::handoff::LocalLocks;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Health, LockBackend, LockSession};

pub use config::{
    ConfigError, DEFAULT_ROOT, DEFAULT_SESSION_TIMEOUT, SENTINEL_FAILOVER_ALLOWANCE, ValkeyConfig,
};
pub use link::TOKEN_JUMP;
pub use registration::REDIS_ENGINE;

use layout::Layout;
use link::Server;
use session::HostSession;
use wake::Wake;

/// The engine's name: `--backend redis`, `kind = "redis"`, and the
/// [`LockBackend::kind`] of its backends.
pub const NAME: &str = "redis";

/// State shared by every guest session of a backend (one host).
pub(crate) struct Shared {
    pub(crate) config: ValkeyConfig,
    pub(crate) server: Arc<Server>,
    pub(crate) layout: Layout,
    /// This host's id in member names and its channel.
    pub(crate) host: String,
    /// What the session key says of the host (for people reading it).
    pub(crate) owner: String,
    pub(crate) local_locks: LocalLocks,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) wake: Arc<Wake>,
    current: Mutex<Option<Arc<HostSession>>>,
    /// Held while a session is opened, so only one is.
    opening: tokio::sync::Mutex<()>,
}

impl Shared {
    fn current(&self) -> MutexGuard<'_, Option<Arc<HostSession>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Locks in Valkey or Redis, one host's view.
pub struct ValkeyBackend {
    shared: Arc<Shared>,
}

impl ValkeyBackend {
    /// A backend that connects on the first lock request.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] for a configuration
    /// [`ValkeyConfig::validate`] rejects; [`BackendError::Unsupported`]
    /// outside a tokio runtime.
    pub fn new(config: ValkeyConfig) -> Result<Self, BackendError> {
        config
            .validate()
            .map_err(|e| BackendError::InvalidConfig(e.to_string()))?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            BackendError::Unsupported(
                "the Valkey/Redis backend must be created inside a tokio runtime".into(),
            )
        })?;
        let server = Arc::new(Server::new(&config)?);
        let layout = Layout::new(&config.root);
        let host = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
        let wake = Wake::start(server.clone(), layout.wake_channel(&host), &runtime);
        let owner = format!(
            "wardlock host {host} (pid {}) on {}",
            std::process::id(),
            hostname()
        );
        let shared = Arc::new(Shared {
            config,
            server,
            layout,
            host,
            owner,
            local_locks: LocalLocks::default(),
            runtime,
            wake,
            current: Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
        });
        Ok(ValkeyBackend { shared })
    }

    /// A backend with its session open, so a wrong address, a refused login
    /// or a server that cannot keep locks safe is reported now.
    ///
    /// # Errors
    /// As [`ValkeyBackend::new`]; [`BackendError::Refused`] naming the
    /// refused login or server setting; [`BackendError::Unavailable`] when
    /// the server cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn connect(config: ValkeyConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        backend.shared.session().await?;
        Ok(backend)
    }

    /// A backend that connects now if it can and otherwise keeps trying on
    /// each lock request.
    ///
    /// # Errors
    /// As [`ValkeyBackend::new`]; a refusal retrying cannot fix; never for
    /// an unreachable server.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn start(config: ValkeyConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        match backend.shared.session().await {
            Ok(_) => {}
            Err(error @ (BackendError::Refused(_) | BackendError::InvalidConfig(_))) => {
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(%error, "starting without Valkey/Redis; connecting on the next lock request");
            }
        }
        Ok(backend)
    }

    /// The configuration.
    pub fn config(&self) -> &ValkeyConfig {
        &self.shared.config
    }

    /// How many of this host's guests hold or wait for `name` (they share
    /// the host's one queue member for it).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn local_contenders(&self, name: &LockName) -> usize {
        self.shared.local_locks.contenders(name).await
    }

    /// What `name`'s hand-off task holds, queues and waits for.
    pub fn describe_local(&self, name: &LockName) -> String {
        self.shared.local_locks.describe(name)
    }

    /// The live members of `name`'s queue on the server, of every host.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the server cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn queued(&self, name: &LockName) -> Result<Vec<String>, BackendError> {
        recipe::members(&self.shared, name).await
    }

    /// The server's product and version (`redis 7.0.15`) and the unsafe
    /// settings accepted, once connected.
    pub fn server(&self) -> Option<(String, Vec<String>)> {
        self.shared.server.facts().map(|f| {
            (
                format!("{} {}", f.product, f.version),
                f.unsafe_settings.clone(),
            )
        })
    }

    /// This host's current session id (`HOST:GEN`), if one is open.
    pub fn session_id(&self) -> Option<String> {
        self.shared.live_session().map(|s| s.id.clone())
    }
}

impl Drop for ValkeyBackend {
    fn drop(&mut self) {
        self.shared.wake.close();
    }
}

impl LockBackend for ValkeyBackend {
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(lock_session::ValkeyLockSession::new(self.shared.clone()))
    }

    fn kind(&self) -> &'static str {
        NAME
    }

    /// The key redis-py's `Lock` takes for it.
    fn location(&self, name: &LockName) -> Option<String> {
        Some(format!("key {}", self.shared.layout.lock_key(name)))
    }

    fn health(&self) -> Health {
        let session = self.shared.live_session().map(|s| s.health());
        wardlock_backend::liveness::backend_health(session, false)
    }

    /// The unsafe settings of the server connected to last, accepted with
    /// [`ValkeyConfig::accept_unsafe`].
    fn warnings(&self) -> Vec<String> {
        self.server()
            .map(|(server, accepted)| {
                accepted
                    .into_iter()
                    .map(|setting| {
                        format!(
                            "{server} runs on an unsafe setting (--redis-accept-unsafe): {setting}"
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.shared.local_locks.drop_caches();
        Box::pin(async move {
            // Closing the session removes its members and deletes its key:
            // the next waiter of each lock is told now. Awaited (bounded), so
            // a host that exits right after frees its locks at once instead
            // of a session timeout later (a background removal could be cut
            // short by the exit).
            let session = self.shared.current().take();
            if let Some(session) = session {
                session.end();
                let bound = self.shared.config.session_timeout;
                let _ = tokio::time::timeout(bound, session.close()).await;
            }
            self.shared.wake.close();
        })
    }
}

/// The machine's name, for the session key's text.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}
