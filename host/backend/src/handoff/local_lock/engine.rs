//! What a host-local lock task needs of the engine that queues the host's
//! node: the seam that lets the task's hand-off rules run, and be tested
//! against a reference model, without a lock service.

use std::pin::Pin;
use std::sync::Arc;

use tokio::time::Instant;

use super::super::LocalLocks;
use super::super::node::{OwnedNode, SessionHealth};
use crate::name::LockName;
use crate::{BackendError, Mode};

/// An acquisition of the host's node: `None` when a try found it taken.
pub type NodeFuture = Pin<Box<dyn Future<Output = Result<Option<OwnedNode>, BackendError>> + Send>>;
/// What a lock task asks the engine for: the host's node for `name` in
/// `mode`, waiting until `deadline` (then `Timeout`) when `wait`, else
/// trying once.
#[derive(Debug, Clone)]
pub struct NodeRequest {
    /// The lock.
    pub name: LockName,
    /// The node's mode: exclusive, or shared when every local guest it
    /// covers reads.
    pub mode: Mode,
    /// When to give up waiting (`Timeout`; the node must not stay queued).
    pub deadline: Option<Instant>,
    /// False for one try: answer `Ok(None)` at once when the lock is taken
    /// (and leave no node behind).
    pub wait: bool,
}

/// Resolves once, when what it watches happens.
pub type WatchFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The engine side of host-local hand-off: what a [`LocalLock`](super::LocalLock)
/// task asks of the lock service for the host's one node per lock. A task
/// holds its engine as an `Arc<dyn NodeEngine>`, made in [`ask`]'s `start`
/// callback (cheap: typically a handle on the backend's shared state).
///
/// The node is the engine's own lock recipe (a sequential node, a key with
/// a creation revision): FIFO among hosts, a token that rises with every
/// node granted, and the node living in a session that ends if the host
/// goes silent. Hand-off adds nothing to the lock service's layout: other
/// clients of the same recipe see one contender per host.
///
/// [`ask`]: super::super::ask
pub trait NodeEngine: Send + Sync + 'static {
    /// The registry of running tasks, which a task leaves when it retires.
    fn local_locks(&self) -> &LocalLocks;

    /// Queues the host's node as `request` says. Cancel safe: a dropped
    /// future leaves nothing queued.
    fn acquire_node(&self, request: NodeRequest) -> NodeFuture;

    /// The engine session of `generation` while it is the current one.
    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>>;

    /// Gives the node up (in the background; retried until its session ends).
    fn release_node(&self, node: OwnedNode);

    /// Resolves when a contender of another client that conflicts with `node`
    /// (held in `mode`) queues behind it; never if its session ends first.
    fn remote_contender(&self, name: &LockName, node: &OwnedNode, mode: Mode) -> WatchFuture;
}

/// An engine session (a ZooKeeper session, an etcd lease) as a hand-off task
/// sees it: the task makes local grants only while it is [`SessionHealth::Live`],
/// and drops its node, reporting every grant under it lost, once it is over.
/// [`crate::liveness::Liveness`] is a clock that answers both.
pub trait NodeSession: Send + Sync {
    /// Whether the session can vouch for its nodes now.
    fn health(&self) -> SessionHealth;

    /// Resolves when the session is over (its nodes are gone).
    fn until_over(self: Arc<Self>) -> WatchFuture;
}
