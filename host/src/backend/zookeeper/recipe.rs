//! The lock recipe: a queue of ephemeral sequential nodes, each waiter watching
//! exactly one node (no herd effect), re-listing after every wake-up.
//!
//! Uncontended acquire is one round trip: `create` and `get_children` are sent back
//! to back on one session, which the server answers in order, so the listing
//! already holds the new node (found by its uuid prefix).

use std::sync::Arc;

use tokio::time::Instant;
use uuid::Uuid;
use zookeeper_client::{CreateMode, Error as ZkError, EventType};

use super::connection::ZkSession;
use super::dialect::{Turn, queue, turn};
use super::{Shared, release};
use crate::backend::{BackendError, Mode};
use crate::name::LockName;

/// A lock node this host created and holds.
#[derive(Debug, Clone)]
pub(super) struct OwnedNode {
    pub path: String,
    pub prefix: String,
    pub generation: u64,
    /// The node's `czxid`: strictly increasing across all grants of all names.
    pub token: u64,
}

/// Whether to wait for the turn or give up at once (try-acquire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waiting {
    Wait,
    DontWait,
}

/// What one attempt on one session came to.
enum Attempt {
    Held(OwnedNode),
    /// Not granted and not waiting (try-acquire).
    Busy,
    /// Start over (on a new session if the old one ended).
    Retry,
}

/// Takes the lock at `parent` in `mode`, writing `data` into the node.
///
/// # Errors
/// `Timeout` past `deadline`; `Unavailable` when ZooKeeper cannot be reached or
/// refuses (e.g. ACLs).
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
    let parent = config.lock_path(name);
    let dialect = config.dialect;
    loop {
        let session = until(deadline, shared.session()).await??;
        let prefix = dialect.node_prefix(Uuid::new_v4(), mode)?;
        let mut pending = PendingNode::new(shared, session.generation, &parent, &prefix);
        let attempt = until(
            deadline,
            attempt(
                shared,
                &session,
                &parent,
                &prefix,
                mode,
                data,
                waiting,
                &mut pending,
            ),
        )
        .await??;
        match attempt {
            Attempt::Held(node) => {
                pending.disarm();
                return Ok(Some(node));
            }
            Attempt::Busy => return Ok(None),
            Attempt::Retry => continue,
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn attempt(
    shared: &Arc<Shared>,
    session: &Arc<ZkSession>,
    parent: &str,
    prefix: &str,
    mode: Mode,
    data: &[u8],
    waiting: Waiting,
    pending: &mut PendingNode,
) -> Result<Attempt, BackendError> {
    let (node, token, mut children) =
        match create_and_list(shared, session, parent, prefix, data).await? {
            Some(created) => created,
            None => return Ok(Attempt::Retry),
        };
    let path = format!("{parent}/{node}");
    pending.created(&path);
    loop {
        let dialect = shared.connection.config().dialect;
        let blocker = match turn(&queue(dialect, &children), &node, mode) {
            Turn::Held => {
                return Ok(Attempt::Held(OwnedNode {
                    path,
                    prefix: prefix.to_owned(),
                    generation: session.generation,
                    token,
                }));
            }
            // Our node vanished (deleted by someone, or the session ended): queue again.
            Turn::Missing => return Ok(Attempt::Retry),
            Turn::WaitFor(blocker) => blocker.to_owned(),
        };
        if waiting == Waiting::DontWait {
            return Ok(Attempt::Busy);
        }
        // A data watch, not `exists`: no watch is left behind if the node is gone.
        match session
            .client
            .get_and_watch_data(&format!("{parent}/{blocker}"))
            .await
        {
            Ok((_, _, watcher)) => {
                let event = watcher.changed().await;
                if event.event_type == EventType::Session && event.session_state.is_terminated() {
                    return Ok(Attempt::Retry);
                }
            }
            Err(ZkError::NoNode) => {}
            Err(error) => {
                if !recoverable(session, error).await? {
                    return Ok(Attempt::Retry);
                }
            }
        }
        // Always list again before deciding: a wake-up is not proof of a turn.
        children = match list(session, parent).await? {
            Some(children) => children,
            None => return Ok(Attempt::Retry),
        };
    }
}

/// Creates the node and lists the parent in one round trip. `None`: retry.
async fn create_and_list(
    shared: &Arc<Shared>,
    session: &Arc<ZkSession>,
    parent: &str,
    prefix: &str,
    data: &[u8],
) -> Result<Option<(String, u64, Vec<String>)>, BackendError> {
    let acls = shared.acls();
    let options = CreateMode::EphemeralSequential.with_acls(acls);
    let node_path = format!("{parent}/{prefix}");
    let create = session.client.create(&node_path, data, &options);
    let listing = session.client.list_children(parent);
    let (created, listed) = tokio::join!(create, listing);
    match created {
        Ok((stat, sequence)) => {
            let node = format!("{prefix}{sequence}");
            let children = match listed {
                Ok(children) if children.contains(&node) => children,
                _ => match list(session, parent).await? {
                    Some(children) => children,
                    None => return Ok(None),
                },
            };
            Ok(Some((node, token_of(stat.czxid), children)))
        }
        Err(ZkError::NoNode) => {
            ensure_parent(shared, session, parent).await?;
            Ok(None)
        }
        Err(ZkError::ConnectionLoss) => {
            // The create may have been applied: find our node by its uuid prefix.
            if session.connected().await.is_err() {
                return Ok(None);
            }
            let Some(children) = list(session, parent).await? else {
                return Ok(None);
            };
            let Some(node) = children.iter().find(|c| c.starts_with(prefix)).cloned() else {
                return Ok(None);
            };
            match session.client.check_stat(&format!("{parent}/{node}")).await {
                Ok(Some(stat)) => Ok(Some((node, token_of(stat.czxid), children))),
                _ => Ok(None),
            }
        }
        Err(error) => {
            recoverable(session, error).await?;
            Ok(None)
        }
    }
}

/// Creates the lock's parent (and missing ancestors) as CONTAINER nodes, which
/// the server removes once empty, so lock directories do not pile up (kazoo #329);
/// PERSISTENT in the kazoo dialect (see [`super::dialect::Dialect::parent_mode`]).
async fn ensure_parent(
    shared: &Arc<Shared>,
    session: &ZkSession,
    parent: &str,
) -> Result<(), BackendError> {
    let mode = shared.connection.config().dialect.parent_mode();
    let options = mode.with_acls(shared.acls());
    match session.client.mkdir(parent, &options).await {
        Ok(()) => Ok(()),
        Err(error) => {
            recoverable(session, error).await?;
            Ok(())
        }
    }
}

/// Lists `parent`'s children, riding out connection losses. `None`: the session
/// ended (or the parent vanished), so the caller starts over.
async fn list(session: &ZkSession, parent: &str) -> Result<Option<Vec<String>>, BackendError> {
    loop {
        match session.client.list_children(parent).await {
            Ok(children) => return Ok(Some(children)),
            Err(ZkError::NoNode) => return Ok(None),
            Err(error) => {
                if !recoverable(session, error).await? {
                    return Ok(None);
                }
            }
        }
    }
}

/// Classifies a failed request. `Ok(true)`: retry on this session (after waiting
/// for the reconnect); `Ok(false)`: the session ended, start over on a new one;
/// `Err`: give up.
async fn recoverable(session: &ZkSession, error: ZkError) -> Result<bool, BackendError> {
    match error {
        ZkError::ConnectionLoss | ZkError::Timeout => Ok(session.connected().await.is_ok()),
        ZkError::SessionExpired | ZkError::ClientClosed | ZkError::SessionMoved => Ok(false),
        ZkError::NodeExists => Ok(true),
        other => Err(BackendError::Unavailable(format!(
            "ZooKeeper refused: {other}"
        ))),
    }
}

/// Runs `future` until `deadline`.
async fn until<T>(
    deadline: Option<Instant>,
    future: impl Future<Output = T>,
) -> Result<T, BackendError> {
    match deadline {
        None => Ok(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline, future)
            .await
            .map_err(|_| BackendError::Timeout),
    }
}

fn token_of(czxid: i64) -> u64 {
    u64::try_from(czxid).unwrap_or(0)
}

/// Deletes the node of an attempt that did not end in a grant, when dropped: after
/// a timeout, an error, a retry, a try-acquire that found the lock busy, or the
/// caller's future being dropped mid-wait.
pub(super) struct PendingNode {
    shared: Arc<Shared>,
    generation: u64,
    parent: String,
    prefix: String,
    path: Option<String>,
    armed: bool,
}

impl PendingNode {
    fn new(shared: &Arc<Shared>, generation: u64, parent: &str, prefix: &str) -> Self {
        shared.track(generation, prefix);
        PendingNode {
            shared: shared.clone(),
            generation,
            parent: parent.to_owned(),
            prefix: prefix.to_owned(),
            path: None,
            armed: true,
        }
    }

    fn created(&mut self, path: &str) {
        self.path = Some(path.to_owned());
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for PendingNode {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let prefix = std::mem::take(&mut self.prefix);
        match self.path.take() {
            Some(path) => release::delete_node(&self.shared, self.generation, prefix, path),
            None => release::delete_by_prefix(
                &self.shared,
                self.generation,
                std::mem::take(&mut self.parent),
                prefix,
            ),
        }
    }
}
