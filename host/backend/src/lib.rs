//! The engine toolkit of wardlock: what a lock service must provide
//! ([`LockBackend`], [`LockSession`]), lock names ([`name`]), the in-memory
//! engine ([`memory`], the embedded default), and what a remote engine is built
//! from: host-local hand-off ([`handoff`]), the session clock ([`liveness`]),
//! back-off ([`backoff`]) and TLS ([`tls`], [`tls_probe`]).
//!
//! Every engine implements these traits: the memory engine here, ZooKeeper
//! (`wardlock-zookeeper`), etcd (`wardlock-etcd`), PostgreSQL
//! (`wardlock-postgres`) and Valkey/Redis (`wardlock-valkey`) in crates of
//! their own, and engines written outside
//! wardlock, which pass the conformance kit (`wardlock-conformance`). The host
//! (`wardlock-host`) calls them and names none.
//!
//! [`LockSession`] is the core every engine implements (acquire, release,
//! status, downgrade); what only some engines offer is a capability trait
//! reached through the session's accessor: [`Semaphores`], [`Revocation`],
//! [`Contention`], [`GuardedStore`], [`KeyValue`], [`Election`]. Whatever watches a session
//! plugs an observer into the one forwarding wrapper ([`observe`]).
//!
//! The traits are free of wasmtime types so an engine compiles, and is tested,
//! without the Wasm runtime. A backend hands out [`LockSession`]s; everything
//! acquired through a session belongs to it and is released when the session is
//! dropped. The host opens one session per guest instance, so a guest's locks
//! live exactly as long as the guest.
//!
//! ```
//! use wardlock_backend::guarded::GuardedKey;
//! use wardlock_backend::name::LockName;
//! use wardlock_backend::{GrantStatus, LockBackend, MemoryBackend, Mode};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = MemoryBackend::new();
//! let session = backend.open_session("an example");
//! let orders = LockName::new("orders")?;
//! let grant = session.acquire(&orders, Mode::Exclusive, None).await?;
//! assert_eq!(session.status(grant.id), GrantStatus::Held);
//!
//! // What only some engines offer is reached through its accessor
//! // (`Unsupported` where the engine has none).
//! let store = session.guarded_store()?;
//! let key = GuardedKey::new("next-id")?;
//! store.guarded_put(grant.id, &key, b"42").await?;
//!
//! session.release(grant.id)?;
//! drop(session); // ends whatever it still held or waited for
//! # Ok(())
//! # }
//! ```

pub mod backoff;
mod contenders;
pub mod election;
mod error;
pub mod grant_table;
pub mod guarded;
pub mod handoff;
pub mod keyvalue;
pub mod liveness;
pub mod memory;
pub mod name;
pub mod observe;
pub mod registry;
mod request;
pub mod revocation;
pub mod secret;
pub mod semaphore;
mod session;
pub mod tls;
pub mod tls_probe;

pub use contenders::{Contender, Contenders, Contention, MAX_LISTED_CONTENDERS, listed_at_most};
pub use election::{Candidate, Election, Leader, LeaderChange};
pub use error::{BackendError, Result};
pub use guarded::{GuardedEntry, GuardedKey, GuardedStore};
pub use keyvalue::KeyValue;
pub use memory::MemoryBackend;
pub use request::{Request, RequestKind};
pub use revocation::{REVOKE_MESSAGE, Revocation, Revoked, never_revoked};
pub use semaphore::{Semaphores, check_permits};
pub use session::LockSession;

use crate::name::LockName;

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One holder at a time (a write lock).
    Exclusive,
    /// Many holders at once, excluded by exclusive holders (a read lock).
    Shared,
}

impl Mode {
    /// The lower-case name used in logs and output (`exclusive`, `shared`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identifies one grant within the session that obtained it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantId(pub u64);

/// A lock granted to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The grant's identity within its session, for [`LockSession::release`].
    pub id: GrantId,
    /// Fencing token: strictly greater than the token of every earlier grant of
    /// the same name that conflicted with this one (an exclusive grant conflicts
    /// with every grant; two shared grants do not).
    pub token: u64,
}

/// What a grant currently guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantStatus {
    /// Held: no conflicting holder exists.
    Held,
    /// Contact with the lock service is interrupted; the grant has not expired yet.
    Suspended,
    /// The grant was taken away (for example the backend session expired).
    Lost,
    /// The grant was released, or never existed in this session.
    Released,
}

/// The future [`LockSession::status_changed`] returns: a grant's new status.
/// It owns what it needs (`'static`): it neither borrows nor keeps alive the
/// session that made it.
pub type StatusChange = std::pin::Pin<Box<dyn Future<Output = GrantStatus> + Send + 'static>>;

/// The [`StatusChange`] of a status that cannot change any more (a released
/// grant, a lost one): resolves at once with `now` when it differs from `seen`,
/// never otherwise.
pub fn settled(now: GrantStatus, seen: GrantStatus) -> StatusChange {
    if now == seen {
        Box::pin(std::future::pending())
    } else {
        Box::pin(std::future::ready(now))
    }
}

/// A lock service. Implementations are shared by every guest instance of a host.
pub trait LockBackend: Send + Sync + 'static {
    /// Opens a session owned by `owner` (a human-readable description such as
    /// `plugin counter.wasm, instance 3`, kept for diagnostics).
    ///
    /// Opening is cheap and does no I/O: backends connect lazily.
    fn open_session(&self, owner: &str) -> Box<dyn LockSession>;

    /// Where lock `name` lives in the lock service, for people (`wardlock
    /// status`): a ZooKeeper path, the name `etcdctl lock` takes. `None` (the
    /// default) for an engine whose locks have no address outside the host.
    fn location(&self, name: &LockName) -> Option<String> {
        let _ = name;
        None
    }

    /// A short name for logs and summaries (`memory`, `zookeeper`, `etcd`).
    fn kind(&self) -> &'static str;

    /// Whether the backend can serve lock requests now (for health checks).
    fn health(&self) -> Health {
        Health::Connected
    }

    /// What the operator accepted that cannot keep locks safe (a server
    /// setting an engine would otherwise refuse), one sentence each: `/healthz`
    /// lists them under the backend's health, so nobody forgets a flag
    /// such as `--redis-accept-unsafe` is in force. Empty (the default) for
    /// an engine that runs only on safe settings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Ends the backend for good, at host shutdown, after every session is
    /// gone: finishes releases still in flight (bounded), then closes the
    /// connection to the lock service so whatever remains is freed at once.
    ///
    /// # Cancellation safety
    /// Cancel safe; a dropped shutdown leaves cleanup to the lock service
    /// (ZooKeeper: the session timeout; etcd: the lease's TTL).
    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// A backend's connection to its lock service, as health checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Connected: lock requests are served.
    Connected,
    /// Not connected now, but the session may still be recovered.
    Connecting,
    /// The session ended (expired or closed); a new one has not been made yet.
    Down,
}
