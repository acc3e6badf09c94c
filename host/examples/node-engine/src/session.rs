//! A guest's lock session: every lock goes through the host's hand-off task
//! for its name ([`handoff::ask`](wardlock_backend::handoff::ask)), which
//! holds the host's one node for it; the session keeps what the task granted
//! in the toolkit's [`SessionGrants`], and a grant's status is its node's
//! session's (what [`SessionLookup`] says of it). The toolkit's
//! [`HandoffSession`] writes the session trait from these parts.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;
use wardlock_backend::handoff::{
    HandoffSession, LocalHandoff, LocalLocks, NodeEngine, SessionGrants, SessionHealth,
    SessionLookup,
};
use wardlock_backend::{BackendError, Mode, Request, RequestKind};

use crate::engine::{Shared, StoreNodes};

/// The host's sessions with the store, as [`SessionGrants`] asks about them.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        let session = self.session_of(generation)?;
        Some(session.liveness.health(true, Instant::now()))
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        let session = self.session_of(generation)?;
        // Compute now, so what the subscriber starts from is current.
        let _ = session.liveness.health(true, Instant::now());
        Some(session.liveness.watch_health())
    }
}

/// A session of [`crate::NodeBackend`]: the grants its locks' tasks made.
pub(crate) struct NodeLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<()>,
}

impl NodeLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        NodeLockSession {
            shared,
            grants: SessionGrants::default(),
        }
    }
}

/// The session's core is the toolkit's ([`HandoffSession`] gives it the
/// session trait); what is this engine's is where a grant's session is and
/// which engine a lock's task queues on. Dropping the session releases its
/// grants (its [`SessionGrants`] does).
impl HandoffSession for NodeLockSession {
    type Extra = ();

    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn grants(&self) -> &SessionGrants<()> {
        &self.grants
    }

    fn lookup(&self) -> &dyn SessionLookup {
        &*self.shared
    }

    fn node_engine(&self) -> Arc<dyn NodeEngine> {
        Arc::new(StoreNodes {
            shared: self.shared.clone(),
        })
    }

    fn limits(&self) -> LocalHandoff {
        self.shared.config.local_handoff
    }

    fn admit(&self, request: Request<'_>) -> Result<(Mode, ()), BackendError> {
        match request.kind {
            RequestKind::Lock(mode) => Ok((mode, ())),
            RequestKind::Permit(_) => Err(BackendError::Unsupported(
                "the node engine has no semaphores".into(),
            )),
        }
    }

    fn downgraded(&self, (): ()) {}
}
