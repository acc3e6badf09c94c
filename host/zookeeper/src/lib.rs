//! The ZooKeeper backend: Curator-compatible read/write lock recipes on a real
//! ZooKeeper ensemble, herd-free, safe under connection loss and session expiry.
//!
//! ```no_run
//! use wardlock_backend::name::LockName;
//! use wardlock_backend::{LockBackend, Mode};
//! use wardlock_zookeeper::{ZooKeeperBackend, ZooKeeperConfig};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ZooKeeperConfig::new("127.0.0.1:2181");
//! let backend = ZooKeeperBackend::connect(config).await?;
//! let session = backend.open_session("an example");
//! let grant = session
//!     .acquire(&LockName::new("orders")?, Mode::Exclusive, None)
//!     .await?;
//! println!("held, fencing token {}", grant.token);
//! # Ok(())
//! # }
//! ```
//!
//! - Guests of one host share a ZooKeeper session; every node is tracked per guest
//!   session and deleted when the guest ends ("guaranteed delete", retried until
//!   done). The ZooKeeper session is only the safety net if the host dies.
//! - Uncontended acquire is one round trip (pipelined create + list).
//! - Fencing token: greater than every earlier conflicting grant's (see `recipe`).
//! - Grants report `Suspended` once contact is interrupted and `Lost` as soon as
//!   the server may have expired the session (see `wardlock_backend::liveness`);
//!   a session ended that way is closed, and new acquisitions use a new session.
//!   Waiters are not told: they re-queue transparently on the new session (they held
//!   nothing, so nothing was lost), keeping their deadline.

mod config;
mod connection;
mod election;
mod guarded;
mod handoff_nodes;
mod inspect;
mod keyvalue;
mod recipe;
mod registration;
mod remote_contender;
mod revoke;
mod semaphore;
mod session;

// Two rooms: `connection/` (the ZooKeeper session: connecting, monitoring,
// reconnecting, the retry policy, shutdown) and `recipe/` (the queue of
// lock nodes: naming, creating, ordering, releasing). Their parts go by the
// names the rest of the backend uses.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use zookeeper_client::Acls;

pub use config::{AUTO_SESSIONS, ConfigError, DEFAULT_SESSION_TIMEOUT, ZooKeeperConfig};
pub use inspect::QueueNode;
pub use recipe::dialect::{Dialect, UnknownDialect};
pub use registration::ZOOKEEPER_ENGINE;

/// The ZooKeeper engine's name: `--backend zookeeper`, `kind = "zookeeper"`,
/// and the [`LockBackend::kind`] of its backends.
pub const NAME: &str = "zookeeper";
pub use wardlock_backend::handoff::LocalHandoff;

use self::connection::Connection;
use self::session::ZkLockSession;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Health, LockBackend, LockSession};

/// The ZooKeeper lock service. Cheap to clone; clones share the sessions.
#[derive(Clone)]
pub struct ZooKeeperBackend {
    /// One per ZooKeeper session of the pool (`ZooKeeperConfig::sessions`).
    shards: Shards,
}

/// The sessions of a backend; a lock name always uses the same one.
pub(crate) type Shards = Arc<[Arc<Shared>]>;

/// The shard that serves lock `name`.
pub(crate) fn shard_for<'a>(shards: &'a Shards, name: &LockName) -> &'a Arc<Shared> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    let index = usize::try_from(hasher.finish() % shards.len() as u64).unwrap_or(0);
    &shards[index]
}

/// State shared by every guest session of a backend.
pub(crate) struct Shared {
    connection: Connection,
    runtime: tokio::runtime::Handle,
    /// Uuid prefixes of every node this host created (or is creating), per
    /// session generation: whatever else the session owns is an orphan.
    tracked: Mutex<HashSet<(u64, String)>>,
    /// Notified whenever a node stops being tracked (shutdown waits on it).
    idle: tokio::sync::Notify,
    /// Host-local hand-off tasks, by lock name.
    local_locks: wardlock_backend::handoff::LocalLocks,
}

impl ZooKeeperBackend {
    /// A backend that connects lazily, on the first lock request.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] for a configuration
    /// [`ZooKeeperConfig::validate`] rejects; [`BackendError::Unsupported`] when
    /// not called inside a tokio runtime (background deletes need one).
    pub fn new(config: ZooKeeperConfig) -> Result<Self, BackendError> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            BackendError::Unsupported(
                "the ZooKeeper backend must be created inside a tokio runtime".into(),
            )
        })?;
        let shards = (0..config.sessions)
            .map(|_| {
                Arc::new(Shared {
                    connection: Connection::new(config.clone()),
                    runtime: runtime.clone(),
                    tracked: Mutex::new(HashSet::new()),
                    idle: tokio::sync::Notify::new(),
                    local_locks: wardlock_backend::handoff::LocalLocks::default(),
                })
            })
            .collect();
        Ok(ZooKeeperBackend { shards })
    }

    /// The first session's shard (the only one unless `sessions` > 1): what the
    /// session accessors below report on.
    fn first(&self) -> &Arc<Shared> {
        &self.shards[0]
    }

    /// A backend with its session already established, so a wrong address or a
    /// server that is down is reported now rather than at the first lock.
    ///
    /// # Errors
    /// As [`ZooKeeperBackend::new`], and [`BackendError::Unavailable`] naming the
    /// hosts when no session could be established within the session timeout.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn connect(config: ZooKeeperConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        for shard in backend.opened_now() {
            shard.session().await?;
        }
        Ok(backend)
    }

    /// The shards to connect when the backend starts: all of them, or only
    /// the first when sessions open on demand.
    fn opened_now(&self) -> &[Arc<Shared>] {
        if self.config().on_demand {
            &self.shards[..1]
        } else {
            &self.shards
        }
    }

    /// How many ZooKeeper sessions this host has open now (at most
    /// [`ZooKeeperConfig::sessions`]; fewer when they open on demand).
    pub fn open_sessions(&self) -> usize {
        self.shards
            .iter()
            .filter(|shard| shard.connection.latest().is_some())
            .count()
    }

    /// A backend that connects now if it can and otherwise keeps trying in
    /// the background (see `reconnect`): started before its ZooKeeper, it is
    /// not ready (requests fail at once with `Unavailable`) until the service
    /// answers, then serves. For hosts and lock services that start in any
    /// order.
    ///
    /// # Errors
    /// As [`ZooKeeperBackend::new`]; a refusal retrying cannot fix (a
    /// certificate or credentials the service rejects); never for an
    /// unreachable service.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn start(config: ZooKeeperConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        for shard in backend.opened_now() {
            match shard.session().await {
                Ok(_) => {}
                // A misconfiguration (TLS, credentials) does not fix itself:
                // refuse to start, naming it, rather than retry for ever.
                Err(error @ (BackendError::Refused(_) | BackendError::InvalidConfig(_))) => {
                    return Err(error);
                }
                Err(error) => {
                    tracing::warn!(%error, "starting without ZooKeeper; connecting in the background");
                }
            }
        }
        Ok(backend)
    }

    /// The configuration.
    pub fn config(&self) -> &ZooKeeperConfig {
        self.first().connection.config()
    }

    /// The id of the current ZooKeeper session, if connected (the first of the
    /// pool's).
    pub fn session_id(&self) -> Option<i64> {
        self.first()
            .connection
            .latest()
            .map(|s| s.client.session_id().0)
    }

    /// Watches the current ZooKeeper session's state (connected, disconnected,
    /// expired…), e.g. for health checks; `None` before the first connection.
    /// With a session pool, the first session's ([`LockBackend::health`]
    /// covers them all).
    pub fn state_watcher(&self) -> Option<zookeeper_client::StateWatcher> {
        self.first()
            .connection
            .latest()
            .map(|s| s.client.state_watcher())
    }

    /// How many of this host's guests hold or wait for `name` through host-local
    /// hand-off (they share one node in the lock's queue); 0 when hand-off is
    /// off or nobody does.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn local_contenders(&self, name: &wardlock_backend::name::LockName) -> usize {
        shard_for(&self.shards, name)
            .local_locks
            .contenders(name)
            .await
    }

    /// What `name`'s hand-off task holds, queues and waits for, read from its
    /// state (for a test's message when a wait runs past its bound).
    pub fn describe_local(&self, name: &wardlock_backend::name::LockName) -> String {
        shard_for(&self.shards, name).local_locks.describe(name)
    }

    /// The current session's id and password, for tools that must act as this
    /// session (tests force its expiry this way); with a session pool, the
    /// first session's.
    pub fn session_info(&self) -> Option<zookeeper_client::SessionInfo> {
        self.first()
            .connection
            .latest()
            .map(|s| s.client.session().clone())
    }
}

impl LockBackend for ZooKeeperBackend {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        let data = format!("{} {owner}", self.config().host_description);
        Box::new(ZkLockSession::new(self.shards.clone(), data))
    }

    fn kind(&self) -> &'static str {
        NAME
    }

    /// The lock's directory node (its queue's parent).
    fn location(&self, name: &LockName) -> Option<String> {
        Some(self.config().lock_path(name))
    }

    /// The worst of the pool's sessions (of those opened on demand, the ones
    /// asked for so far, and always the first).
    ///
    /// A shard is `Connected` while its session is live (connected and heard
    /// from within a fifth of the session timeout), `Connecting` while contact
    /// is interrupted or no session was made yet, `Down` once its session
    /// ended and the service is judged unreachable.
    fn health(&self) -> Health {
        let of = |shard: &Arc<Shared>| {
            wardlock_backend::liveness::backend_health(
                shard.connection.latest().map(|s| s.health()),
                shard.connection.unreachable().is_some(),
            )
        };
        let all: Vec<Health> = self
            .shards
            .iter()
            .enumerate()
            .filter(|(i, shard)| *i == 0 || shard.connection.asked())
            .map(|(_, shard)| of(shard))
            .collect();
        [Health::Down, Health::Connecting]
            .into_iter()
            .find(|worst| all.contains(worst))
            .unwrap_or(Health::Connected)
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            // The sessions close side by side: each may wait (bounded) for
            // its releases and for the server's acknowledgement.
            let closing: Vec<_> = self
                .shards
                .iter()
                .cloned()
                .map(|shard| {
                    tokio::spawn(async move { connection::shutdown::shutdown(&shard).await })
                })
                .collect();
            for close in closing {
                if let Err(error) = close.await {
                    tracing::warn!(%error, "closing a ZooKeeper session failed");
                }
            }
        })
    }
}

impl Shared {
    /// The current ZooKeeper session, connecting (and starting its monitor) when
    /// needed.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when ZooKeeper cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    async fn session(self: &Arc<Self>) -> Result<Arc<connection::ZkSession>, BackendError> {
        let connected = self.connection.session().await;
        self.watch_new(connected)
    }

    /// As [`Self::session`], but tries even while the service is judged
    /// unreachable (the reconnect loop's attempt).
    ///
    /// # Errors
    /// As [`Self::session`].
    ///
    /// # Cancellation safety
    /// Cancel safe.
    async fn establish(self: &Arc<Self>) -> Result<Arc<connection::ZkSession>, BackendError> {
        let connected = self.connection.establish().await;
        self.watch_new(connected)
    }

    /// Starts the monitor of a session this host just connected.
    fn watch_new(
        self: &Arc<Self>,
        connected: Result<(Arc<connection::ZkSession>, bool), BackendError>,
    ) -> Result<Arc<connection::ZkSession>, BackendError> {
        let (session, fresh) = match connected {
            Ok(connected) => connected,
            Err(error) => {
                // The service is judged unreachable: get it back in the
                // background rather than on some later request.
                connection::reconnect::start(self);
                return Err(error);
            }
        };
        if fresh {
            self.spawn(connection::monitor::monitor(
                Arc::downgrade(self),
                Arc::downgrade(&session),
            ));
        }
        Ok(session)
    }

    fn acls(&self) -> Acls<'static> {
        if self.connection.config().digest_auth.is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        }
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.runtime.spawn(task);
    }

    fn tracked(&self) -> MutexGuard<'_, HashSet<(u64, String)>> {
        self.tracked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn track(&self, generation: u64, prefix: &str) {
        self.tracked().insert((generation, prefix.to_owned()));
    }

    fn untrack(&self, generation: u64, prefix: &str) {
        self.tracked().remove(&(generation, prefix.to_owned()));
        self.idle.notify_waiters();
    }
}
