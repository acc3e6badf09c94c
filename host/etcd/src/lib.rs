//! The etcd v3 backend: locks that `etcdctl lock` and Go's
//! `clientv3/concurrency.Mutex` share (see `layout`), read/write queues on the
//! same keys, one lease per host (see `lease`), and host-local hand-off for
//! every lock (see `wardlock_backend::handoff`): a host queues one key per lock
//! and passes the grant among its guests in memory.
//!
//! ```no_run
//! use wardlock_backend::name::LockName;
//! use wardlock_backend::{LockBackend, Mode};
//! use wardlock_etcd::{EtcdBackend, EtcdConfig};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = EtcdBackend::connect(EtcdConfig::new("http://127.0.0.1:2379")).await?;
//! let session = backend.open_session("an example");
//! let grant = session
//!     .acquire(&LockName::new("orders")?, Mode::Exclusive, None)
//!     .await?;
//! println!("held, fencing token {}", grant.token);
//! # Ok(())
//! # }
//! ```
//!
//! Leader election (`election`) shares the locks' layout, as `etcdctl elect`
//! does (`concurrency.Election`): a candidate is a key of its own under the
//! election name's lock prefix.
//!
//! Semaphores (`semaphore`), revocation (`revoke`) and the guarded store
//! (`guarded`) use layouts of wardlock's own under `<root>/%sem/`,
//! `<root>/%revoke/` and `<root>/%data/`, which no lock's prefix covers.

mod config;
mod connect;
mod election;
mod errors;
mod guarded;
mod handoff_nodes;
mod inspect;
mod keyvalue;
mod layout;
mod lease;
mod recipe;
mod registration;
mod revoke;
mod semaphore;
mod session;
mod watch;

use std::sync::Arc;

pub use config::{DEFAULT_LEASE_TTL, EtcdConfig};
pub use inspect::EtcdContender;
pub use layout::etcdctl_name;
pub use registration::ETCD_ENGINE;

/// The etcd engine's name: `--backend etcd`, `kind = "etcd"`, and the
/// [`LockBackend::kind`] of its backends.
pub const NAME: &str = "etcd";

use lease::Leases;
use recipe::Deletes;
use wardlock_backend::handoff::LocalLocks;
use wardlock_backend::{BackendError, Health, LockBackend, LockSession};

/// State shared by every guest session of a backend.
pub(crate) struct Shared {
    leases: Arc<Leases>,
    /// Host-local hand-off tasks, by lock name.
    local_locks: LocalLocks,
    deletes: Deletes,
    /// Counts this host's permit keys (`<lease hex>-<k>`).
    permit_keys: std::sync::atomic::AtomicU64,
    /// Counts this host's election candidates' keys (`<lease hex>-<k>`).
    candidate_keys: std::sync::atomic::AtomicU64,
    runtime: tokio::runtime::Handle,
}

/// Locks in etcd. Cheap to share: clone the `Arc` it is used through.
pub struct EtcdBackend {
    shared: Arc<Shared>,
}

impl EtcdBackend {
    /// A backend that connects on the first lock request.
    ///
    /// # Errors
    /// [`BackendError::InvalidConfig`] for a configuration
    /// [`EtcdConfig::validate`] rejects; [`BackendError::Unsupported`] outside
    /// a tokio runtime (keep-alives and deletes run on it).
    pub fn new(config: EtcdConfig) -> Result<Self, BackendError> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            BackendError::Unsupported(
                "the etcd backend must be created inside a tokio runtime".into(),
            )
        })?;
        let shared = Arc::new(Shared {
            leases: Arc::new(Leases::new(config, runtime.clone())),
            local_locks: LocalLocks::default(),
            deletes: Deletes::default(),
            permit_keys: std::sync::atomic::AtomicU64::new(0),
            candidate_keys: std::sync::atomic::AtomicU64::new(0),
            runtime,
        });
        Ok(EtcdBackend { shared })
    }

    /// A backend with its lease granted, so a wrong address or a cluster that
    /// is down is reported now.
    ///
    /// # Errors
    /// As [`EtcdBackend::new`], and [`BackendError::Unavailable`] naming the
    /// endpoints when no lease was granted within the connect timeout.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn connect(config: EtcdConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        backend.shared.leases.establish().await?;
        Ok(backend)
    }

    /// A backend that connects now if it can and otherwise keeps trying in
    /// the background; until then requests fail at once (`Unavailable`).
    ///
    /// # Errors
    /// As [`EtcdBackend::new`]; a refusal retrying cannot fix (a certificate
    /// or credentials the cluster rejects); never for an unreachable cluster.
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn start(config: EtcdConfig) -> Result<Self, BackendError> {
        let backend = Self::new(config)?;
        match backend.shared.leases.establish().await {
            Ok(_) => {}
            // A misconfiguration (TLS, credentials) does not fix itself:
            // refuse to start, naming it, rather than retry for ever.
            Err(error @ (BackendError::Refused(_) | BackendError::InvalidConfig(_))) => {
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(%error, "starting without etcd; connecting in the background");
            }
        }
        Ok(backend)
    }

    /// The configuration.
    pub fn config(&self) -> &EtcdConfig {
        self.shared.leases.config()
    }

    /// How many of this host's guests hold or wait for `name` (they share
    /// the host's one key for it).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn local_contenders(&self, name: &wardlock_backend::name::LockName) -> usize {
        self.shared.local_locks.contenders(name).await
    }

    /// What `name`'s hand-off task holds, queues and waits for, read from its
    /// state (for a test's message when a wait runs past its bound).
    pub fn describe_local(&self, name: &wardlock_backend::name::LockName) -> String {
        self.shared.local_locks.describe(name)
    }

    /// The current lease's ID, if one lives.
    pub fn lease_id(&self) -> Option<i64> {
        self.shared.leases.latest().map(|l| l.id)
    }
}

impl LockBackend for EtcdBackend {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        let _ = owner;
        Box::new(session::EtcdLockSession::new(self.shared.clone()))
    }

    fn kind(&self) -> &'static str {
        NAME
    }

    /// The name `etcdctl lock` takes for the lock (its keys' prefix).
    fn location(&self, name: &wardlock_backend::name::LockName) -> Option<String> {
        Some(etcdctl_name(&self.shared.leases.config().root, name))
    }

    fn health(&self) -> Health {
        let leases = &self.shared.leases;
        wardlock_backend::liveness::backend_health(
            leases.latest().map(|l| l.health()),
            leases.is_unreachable(),
        )
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        // Revoking the lease deletes every key of this host at once, cached
        // ones too; no lock is cached from now on.
        self.shared.local_locks.drop_caches();
        Box::pin(self.shared.leases.close())
    }
}
