//! An example remote-style lock engine with host-local hand-off, written the
//! way an engine of your own is: outside wardlock's source tree, against the
//! published engine toolkit (`wardlock-backend`) alone.
//!
//! The lock service is [`Store`], a tiny one in this process: sessions that
//! end when their client goes silent, sequential nodes in a directory per
//! lock, watches on a node's deletion and on a directory's children — what a
//! ZooKeeper lock recipe uses. Several backends on one store are several
//! hosts on one service.
//!
//! The engine ([`NodeBackend`]) queues one node per (host, lock) and lets
//! the toolkit's hand-off task pass the grant among the host's guests in
//! memory, in FIFO order, bounded for fairness to other hosts
//! ([`LocalHandoff`]):
//! - `engine.rs`: the host's node ([`NodeEngine`]: queue it, release it,
//!   notice a contender of another host behind it, name its session) and the
//!   host's session as a hand-off task sees it ([`NodeSession`], over the
//!   toolkit's session clock, [`Liveness`]);
//! - `session.rs`: a guest's [`LockSession`](wardlock_backend::LockSession),
//!   which asks the lock's task for each grant
//!   ([`handoff::ask`](wardlock_backend::handoff::ask)) and reports its
//!   node's session's health as the grant's status;
//! - `tests/conformance.rs`: wardlock's conformance kit on it, one test per
//!   check.
//!
//! It offers locks and downgrade; semaphores, revocation, the contenders
//! list, the guarded store and elections answer `Unsupported`.
//!
//! [`NodeEngine`]: wardlock_backend::handoff::NodeEngine
//! [`NodeSession`]: wardlock_backend::handoff::NodeSession
//! [`Liveness`]: wardlock_backend::liveness::Liveness

mod engine;
mod session;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use wardlock_backend::handoff::{LocalHandoff, SessionHealth};
use wardlock_backend::name::LockName;
use wardlock_backend::{Health, LockBackend, LockSession, liveness};

pub use store::{Child, Store, StoreError};

use engine::{Shared, dir_of};
use session::NodeLockSession;

/// How a [`NodeBackend`] behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeConfig {
    /// After how long without a ping the store ends the host's session (and
    /// deletes its nodes); the host stops vouching for its grants sooner (a
    /// fifth of it: suspended; all of it: lost).
    pub session_timeout: Duration,
    /// How far the host hands a lock among its own guests while another
    /// host waits: [`LocalHandoff::default`] (32 grants or 10 ms), or
    /// [`LocalHandoff::NONE`] to let a waiting host go next after the
    /// current holder.
    pub local_handoff: LocalHandoff,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            session_timeout: Duration::from_secs(10),
            local_handoff: LocalHandoff::default(),
        }
    }
}

/// Locks in a [`Store`], one host's view. Cheap to clone; clones are the same
/// host (they share its session and its hand-off tasks).
#[derive(Clone)]
pub struct NodeBackend {
    shared: Arc<Shared>,
}

impl NodeBackend {
    /// A host on `store`. It opens its session with the store on the first
    /// lock request (inside a tokio runtime, where its heartbeat runs).
    pub fn new(store: Store, config: NodeConfig) -> Self {
        NodeBackend {
            shared: Arc::new(Shared::new(store, config)),
        }
    }

    /// How many of this host's guests hold or wait for `name` (they share
    /// the host's one node for it).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn local_contenders(&self, name: &LockName) -> usize {
        self.shared.local_locks.contenders(name).await
    }

    /// The nodes queued for `name` in the store, of every host.
    pub fn nodes(&self, name: &LockName) -> Vec<Child> {
        self.shared.store.children(&dir_of(name))
    }

    /// The store's id of this host's current session, if one was opened.
    pub fn session_id(&self) -> Option<u64> {
        self.shared.latest().map(|s| s.id)
    }
}

impl LockBackend for NodeBackend {
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(NodeLockSession::new(self.shared.clone()))
    }

    fn kind(&self) -> &'static str {
        "node"
    }

    fn health(&self) -> Health {
        let now = Instant::now();
        let session: Option<SessionHealth> =
            self.shared.latest().map(|s| s.liveness.health(true, now));
        liveness::backend_health(session, false)
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {
            // Ending the session deletes every node of this host at once.
            if let Some(session) = self.shared.latest() {
                self.shared.store.close_session(session.id);
                session.expired();
            }
        })
    }
}
