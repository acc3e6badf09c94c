//! A guest's lock session: every lock goes through the host's hand-off task
//! for its name (one queue member per host and lock; see `recipe`), the
//! session keeps what the task granted (the toolkit's [`SessionGrants`]),
//! and a grant's status is its member's session's, by the host's clock.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use wardlock_backend::handoff::{
    HandoffSession, LocalHandoff, LocalLock, LocalLocks, NodeEngine, SessionGrants, SessionHealth,
    SessionLookup,
};
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Contender, Contenders, Contention, Mode, Request, RequestKind, Result,
};

use crate::Shared;
use crate::nodes::ValkeyNodes;
use crate::recipe;

/// The host's sessions, as [`SessionGrants`] asks about them.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        Some(self.session_of(generation)?.health())
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        let session = self.session_of(generation)?;
        // Compute now, so what the subscriber starts from is current.
        let _ = session.health();
        Some(session.liveness.watch_health())
    }
}

/// A session of [`crate::ValkeyBackend`].
pub(crate) struct ValkeyLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<()>,
}

impl ValkeyLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        ValkeyLockSession {
            shared,
            grants: SessionGrants::default(),
        }
    }
}

/// The core of the session is the toolkit's; what is this engine's is where
/// a grant's session is and which engine a lock's task queues on.
impl HandoffSession for ValkeyLockSession {
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
        Arc::new(ValkeyNodes {
            shared: self.shared.clone(),
        })
    }

    fn limits(&self) -> LocalHandoff {
        self.shared.config.local_handoff
    }

    /// On the backend's runtime, which outlives the caller's.
    fn spawn(&self, lock: LocalLock) {
        self.shared.runtime.spawn(lock.run());
    }

    fn admit(&self, request: Request<'_>) -> Result<(Mode, ())> {
        match request.kind {
            RequestKind::Lock(mode) => Ok((mode, ())),
            RequestKind::Permit(_) => Err(BackendError::Unsupported(
                "the Valkey/Redis engine has no semaphores yet".into(),
            )),
        }
    }

    fn downgraded(&self, (): ()) {}

    wardlock_backend::offers!(contention);
}

#[async_trait]
impl Contention for ValkeyLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        let members = recipe::members(&self.shared, name).await?;
        let contenders = members.iter().enumerate().map(|(at, member)| {
            let mut parts = member.splitn(3, ':');
            let _token = parts.next();
            let mode = match parts.next() {
                Some("r") => Mode::Shared,
                _ => Mode::Exclusive,
            };
            Contender {
                owner: parts.next().unwrap_or_default().to_owned(),
                mode,
                holds: holds(&members, at),
                // A grant's token is its member's shifted, plus the grants
                // the host made under it (hand-off): not the member's alone.
                token: None,
                node: Some(member.clone()),
            }
        });
        Ok(Contenders::head(contenders, limit))
    }
}

/// Whether the member at `at` holds: no conflicting member ahead.
fn holds(members: &[String], at: usize) -> bool {
    let write = |m: &String| m.split(':').nth(1) == Some("w");
    let ours = write(&members[at]);
    !members[..at].iter().any(|m| ours || write(m))
}
