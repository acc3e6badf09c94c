//! A guest session's side of host-local hand-off: the grants its lock tasks
//! made, each with what the engine keeps beside it, and their statuses. Every
//! engine whose locks go through [`ask`](super::ask) keeps one per
//! [`LockSession`](crate::LockSession), and `release`, `status`,
//! `status_changed` and `downgrade` are answered from it ([`HandoffSession`](super::HandoffSession)
//! does so), so an engine writes only how its node's session is doing
//! ([`SessionLookup`]). Dropping it releases every grant it still keeps.
//!
//! A grant may also stand on a node of its own, never handed off (a
//! leadership or a permit: one guest's, with a token of its own), given up
//! through the engine's [`NodeEngine::release_node`]:
//! [`SessionGrants::record_own`].

use std::sync::Arc;

use tokio::sync::watch;

use super::node::SessionHealth;
use super::request::{LocalHeld, downgrade};
use super::{LocalLocks, NodeEngine, OwnedNode, local_token};
use crate::grant_table::{GrantEntry, GrantTable};
use crate::{BackendError, Grant, GrantId, GrantStatus, StatusChange};

/// How a node's session is doing, by generation ([`LocalHeld::generation`]):
/// what an engine tells [`SessionGrants`].
pub trait SessionLookup {
    /// The health of the session `generation` now; `None` when it is over
    /// (or unknown).
    fn health(&self, generation: u64) -> Option<SessionHealth>;

    /// The health the session `generation` publishes, computed now (so a
    /// subscriber starts from the current value); `None` when it is over.
    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>>;
}

/// Where a grant of a [`SessionGrants`] stands: the node that covers it,
/// the grant's token and the session the node lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The node's path or key ([`OwnedNode::path`]).
    pub path: String,
    /// The grant's fencing token.
    pub token: u64,
    /// The node's session ([`OwnedNode::generation`]).
    pub generation: u64,
    /// Whether the node is the grant's own ([`SessionGrants::record_own`])
    /// rather than the host's, shared through its lock task.
    pub own: bool,
}

/// How a grant is held.
enum Holding {
    /// A share of the host's node, through the lock's task.
    Local(LocalHeld),
    /// A node of the grant's own, given up through `engine`.
    Own {
        node: OwnedNode,
        engine: Arc<dyn NodeEngine>,
    },
}

/// A grant of the session, and what the engine keeps beside it.
struct Kept<T> {
    holding: Holding,
    /// What the engine keeps beside the grant (its lock name and mode, …).
    extra: T,
}

impl<T: Send + 'static> Kept<T> {
    fn standing(&self) -> Standing {
        match &self.holding {
            Holding::Local(local) => Standing {
                path: local.path.clone(),
                token: local.token,
                generation: local.generation,
                own: false,
            },
            Holding::Own { node, .. } => Standing {
                path: node.path.clone(),
                token: self.token(),
                generation: node.generation,
                own: true,
            },
        }
    }

    fn generation(&self) -> u64 {
        match &self.holding {
            Holding::Local(local) => local.generation,
            Holding::Own { node, .. } => node.generation,
        }
    }
}

impl<T: Send + 'static> GrantEntry for Kept<T> {
    fn token(&self) -> u64 {
        match &self.holding {
            Holding::Local(local) => local.token,
            Holding::Own { node, .. } => local_token(node.token, 0),
        }
    }

    fn release(self) {
        match self.holding {
            Holding::Local(local) => local.release(),
            Holding::Own { node, engine } => engine.release_node(node),
        }
    }
}

/// The grants of one session (see the module doc): a [`GrantTable`] whose
/// entries are grants of lock tasks or of nodes of their own. `T` is what
/// the engine keeps beside each grant.
pub struct SessionGrants<T: Send + 'static> {
    table: GrantTable<Kept<T>>,
}

impl<T: Send + 'static> Default for SessionGrants<T> {
    fn default() -> Self {
        SessionGrants {
            table: GrantTable::default(),
        }
    }
}

impl<T: Clone + Send + 'static> SessionGrants<T> {
    /// Keeps `local` (with `extra`) and returns the guest's grant: a new id,
    /// the task's token.
    pub fn record(&self, local: LocalHeld, extra: T) -> Grant {
        self.table.record(Kept {
            holding: Holding::Local(local),
            extra,
        })
    }

    /// Keeps `node`, a node of the grant's own that no lock task shares
    /// (with `extra`), and returns the guest's grant: a new id, the token
    /// `local_token(node.token, 0)`. Releasing the grant (or dropping the
    /// table) gives the node up through `engine`; its status is the node's
    /// session's.
    pub fn record_own(&self, node: OwnedNode, engine: Arc<dyn NodeEngine>, extra: T) -> Grant {
        self.table.record(Kept {
            holding: Holding::Own { node, engine },
            extra,
        })
    }

    /// Where `grant` stands and the engine's extra, if held here.
    pub fn get(&self, grant: GrantId) -> Option<(Standing, T)> {
        self.table
            .with(grant, |held, _| (held.standing(), held.extra.clone()))
    }

    /// Releases `grant`: its task hands the lock on.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when it is not held here.
    pub fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        self.table.release(grant)
    }

    /// What `grant` guarantees now: released when not held here, else its
    /// node's session's health.
    pub fn status(&self, grant: GrantId, sessions: &dyn SessionLookup) -> GrantStatus {
        self.table
            .status(grant, |held| sessions.health(held.generation()))
    }

    /// Resolves once `grant`'s status differs from `seen` (see
    /// [`LockSession::status_changed`](crate::LockSession::status_changed)).
    pub fn status_changed(
        &self,
        grant: GrantId,
        seen: GrantStatus,
        sessions: &dyn SessionLookup,
    ) -> StatusChange {
        self.table
            .status_changed(grant, seen, |held| sessions.watch(held.generation()))
    }

    /// A shared grant beside exclusive grant `exclusive` (a downgrade at its
    /// task), kept with `extra`.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `exclusive` is not held here (or
    /// not exclusively at its task); [`BackendError::InvalidRequest`] for a
    /// grant on a node of its own (a leadership, a permit), which no task
    /// shares.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`downgrade`].
    pub async fn downgrade(
        &self,
        locks: &LocalLocks,
        exclusive: GrantId,
        extra: impl FnOnce(T) -> T,
    ) -> Result<Grant, BackendError> {
        let (local, kept) = self
            .table
            .with(exclusive, |held, _| match &held.holding {
                Holding::Local(local) => Ok((local.clone(), held.extra.clone())),
                Holding::Own { .. } => Err(BackendError::InvalidRequest(
                    "this grant stands on a node of its own (a leadership or a permit): it has no shared form"
                        .into(),
                )),
            })
            .ok_or(BackendError::UnknownGrant(exclusive.0))??;
        let shared = downgrade(locks, &local).await?;
        Ok(self.record(shared, extra(kept)))
    }
}
