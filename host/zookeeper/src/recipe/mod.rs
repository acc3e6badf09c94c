//! The lock recipe: a queue of ephemeral sequential nodes, each waiter watching
//! exactly one node (no herd effect), re-listing after every wake-up.
//!
//! Uncontended acquire is one round trip (see [`self::create::create_and_list`]).
//! Connection loss within a live session never ends an attempt: requests wait for
//! the reconnect and repeat; a session that ended is replaced and the wait starts
//! over, keeping the caller's deadline.
//!
//! Fencing token: `max(czxid of our node, pzxid of the listing that granted it)`.
//! An earlier conflicting grant was deleted (released, or expired with its
//! session) before the listing that showed our turn, so that listing's `pzxid` is
//! at least the zxid of that delete, which is greater than the earlier grant's own
//! token. Readers granted together may share a `pzxid`; their distinct `czxid`s
//! and the conflict rule need no more.

pub(super) mod create;
pub(super) mod dialect;
pub(super) mod downgrade;
pub(super) mod pending;
pub(super) mod queue;
pub(super) mod release;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;
use zookeeper_client::{Error as ZkError, EventType};

use self::create::{Listing, create_and_list, list};
use self::pending::PendingNode;
use self::queue::{Turn, queue, turn};
use super::Shared;
use super::connection::ZkSession;
use crate::connection::retry;
pub(super) use wardlock_backend::handoff::{OwnedNode, until};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

/// Without a deadline, how long connecting a new session may keep failing before
/// the caller is told the service is unavailable (in session timeouts).
const CONNECT_PATIENCE: u32 = 2;
/// Pause between attempts to connect a new session.
const CONNECT_BACKOFF: Duration = Duration::from_millis(200);

/// Whether to wait for the turn or give up at once (try-acquire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waiting {
    Wait,
    DontWait,
}

/// One request for a lock, as the attempts on successive sessions share it.
pub(super) struct Request<'a> {
    pub shared: &'a Arc<Shared>,
    pub parent: String,
    /// The node layout (the configured one, or `curator-mutex` for a
    /// semaphore's internal mutex).
    pub dialect: super::Dialect,
    pub mode: Mode,
    pub data: &'a [u8],
    pub waiting: Waiting,
}

/// What one attempt on one session came to.
enum Attempt {
    Held(OwnedNode),
    /// Not granted and not waiting (try-acquire).
    Busy,
    /// Start over (on a new session if the old one ended).
    Retry,
}

/// Takes lock `name` in `mode`, writing `data` into the node.
///
/// # Errors
/// `Timeout` past `deadline`; `Unavailable` when ZooKeeper refuses (e.g. ACLs) or
/// no session can be connected (until the deadline; without one, for two session
/// timeouts).
///
/// # Cancellation safety
/// Cancel safe: a node created for a dropped call is deleted in the background
/// (found by its uuid when the create's answer never arrived).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    name: &LockName,
    mode: Mode,
    data: &[u8],
    deadline: Option<Instant>,
    waiting: Waiting,
) -> Result<Option<OwnedNode>, BackendError> {
    let config = shared.connection.config();
    let request = Request {
        shared,
        parent: config.lock_path(name),
        dialect: config.dialect,
        mode,
        data,
        waiting,
    };
    acquire_at(&request, deadline).await
}

/// Takes the lock `request` describes (at its parent, in its dialect), as
/// [`acquire`] does: the semaphore's internal mutex uses it directly.
///
/// # Errors
/// As [`acquire`].
///
/// # Cancellation safety
/// As [`acquire`].
pub(super) async fn acquire_at(
    request: &Request<'_>,
    deadline: Option<Instant>,
) -> Result<Option<OwnedNode>, BackendError> {
    let shared = request.shared;
    let (dialect, mode) = (request.dialect, request.mode);
    loop {
        let session = until(deadline, connect(shared, deadline)).await??;
        let prefix = dialect.node_prefix(Uuid::new_v4(), mode)?;
        let mut pending = PendingNode::new(shared, session.generation, &request.parent, &prefix);
        let outcome = until(deadline, attempt(request, &session, &prefix, &mut pending)).await??;
        match outcome {
            Attempt::Held(node) => {
                pending.disarm();
                return Ok(Some(node));
            }
            Attempt::Busy => return Ok(None),
            Attempt::Retry => continue,
        }
    }
}

/// The current session, retrying a failing connect while the deadline allows
/// (a failover or restart may take a moment).
pub(super) async fn connect(
    shared: &Arc<Shared>,
    deadline: Option<Instant>,
) -> Result<Arc<ZkSession>, BackendError> {
    let patience = shared.connection.config().session_timeout * CONNECT_PATIENCE;
    let give_up = deadline.unwrap_or_else(|| Instant::now() + patience);
    loop {
        match shared.session().await {
            Ok(session) => return Ok(session),
            // Judged unreachable (a session ended and reconnecting failed):
            // fail fast rather than wait out the deadline.
            Err(error) if shared.connection.unreachable().is_some() => return Err(error),
            Err(error) if Instant::now() + CONNECT_BACKOFF >= give_up => return Err(error),
            Err(error) => {
                tracing::debug!(%error, "connecting a ZooKeeper session failed; retrying");
                tokio::time::sleep(CONNECT_BACKOFF).await;
            }
        }
    }
}

async fn attempt(
    request: &Request<'_>,
    session: &Arc<ZkSession>,
    prefix: &str,
    pending: &mut PendingNode,
) -> Result<Attempt, BackendError> {
    let shared = request.shared;
    let parent = request.parent.as_str();
    let Some(created) = create_and_list(shared, session, parent, prefix, request.data).await?
    else {
        return Ok(Attempt::Retry);
    };
    let node = created.node;
    let path = format!("{parent}/{node}");
    pending.created(&path);
    let mut listing: Listing = created.listing;
    let dialect = request.dialect;
    loop {
        let blocker = match turn(&queue(dialect, &listing.children), &node, request.mode) {
            Turn::Held => {
                return Ok(Attempt::Held(OwnedNode {
                    path,
                    prefix: prefix.to_owned(),
                    generation: session.generation,
                    token: token_of(created.czxid.max(listing.pzxid)),
                }));
            }
            // Our node vanished (deleted by someone, or the session ended): queue again.
            Turn::Missing => return Ok(Attempt::Retry),
            Turn::WaitFor(blocker) => blocker.to_owned(),
        };
        if request.waiting == Waiting::DontWait {
            return Ok(Attempt::Busy);
        }
        if !wait_for_change(session, &format!("{parent}/{blocker}")).await? {
            return Ok(Attempt::Retry);
        }
        // Always list again before deciding: a wake-up is not proof of a turn.
        listing = match list(session, parent).await? {
            Some(listing) => listing,
            None => return Ok(Attempt::Retry),
        };
    }
}

/// Waits until `blocker` changes or goes. A data watch, not `exists`: no watch is
/// left behind if the node is gone. False: the session ended, start over.
pub(super) async fn wait_for_change(
    session: &ZkSession,
    blocker: &str,
) -> Result<bool, BackendError> {
    match session.client.get_and_watch_data(blocker).await {
        Ok((_, _, watcher)) => Ok(watch_fired(session, watcher).await),
        Err(ZkError::NoNode) => Ok(true),
        Err(error) => retry::after(session, error).await,
    }
}

/// Waits until `watcher` fires; false when the session ended meanwhile (start
/// over).
pub(super) async fn watch_fired(
    session: &ZkSession,
    watcher: zookeeper_client::OneshotWatcher,
) -> bool {
    tokio::select! {
        event = watcher.changed() => !(event.event_type == EventType::Session
            && event.session_state.is_terminated()),
        () = session.liveness.until_ended() => false,
    }
}

pub(super) fn token_of(zxid: i64) -> u64 {
    u64::try_from(zxid).unwrap_or(0)
}
