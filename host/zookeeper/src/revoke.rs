//! Revocation on ZooKeeper, interoperable with Curator's protocol: a request
//! writes `__REVOKE__` into every current holder's lock node (what Curator's
//! `Revoker.attemptRevoke` does to one node); a holder learns it through a
//! data watch on its own node (what Curator's revocable locks set).
//!
//! The watch is set lazily, the first time the guest asks about revocation
//! (`revocation_requested`, `revoked`), so locks nobody asks about cost no
//! extra request. Its first read also sees a `__REVOKE__` written before the
//! watch existed. One task per watched grant re-reads the node after each data
//! change and ends with the grant, the node or the ZooKeeper session.
//!
//! With host-local hand-off one node serves the host's local holders: a
//! revocation addresses the node, so it reaches every local holder under it.
//! The first holder whose watch sees it tells the lock's task, which then
//! drains the node (no more local grants under it): the node goes once its
//! holders gave up, and the host's next local holders queue a new node,
//! behind whoever asked.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::Error as ZkError;

use super::Shared;
use super::recipe::{connect, until, watch_fired};
use crate::connection::retry;
use crate::recipe::queue::{holds, queue};
use wardlock_backend::name::LockName;
pub(super) use wardlock_backend::revocation::{Seen, asked, revoked};
use wardlock_backend::{BackendError, REVOKE_MESSAGE};

/// Called once when a watch sees `__REVOKE__` (a host-local grant tells its
/// lock's task).
pub(super) type OnAsked = Box<dyn FnOnce(&str) + Send>;

/// Starts watching the node at `path` (made on session `generation`) for
/// `__REVOKE__`, until `alive` closes (the grant ended).
pub(super) fn watch_node(
    shared: &Arc<Shared>,
    generation: u64,
    path: String,
    mut alive: watch::Receiver<()>,
    on_asked: Option<OnAsked>,
) -> watch::Receiver<Seen> {
    let (seen, receiver) = watch::channel(Seen::Unknown);
    let task_shared = shared.clone();
    shared.spawn(async move {
        tokio::select! {
            // Never sent to: this is the grant ending.
            _ = alive.changed() => {}
            () = follow(&task_shared, generation, &path, &seen, on_asked) => {}
        }
    });
    receiver
}

/// Reads the node with a data watch until it carries `__REVOKE__`, the node
/// goes or the session ends. Each turn waits for one event on the node.
/// `on_asked` runs before the holder is told, so whatever the holder does
/// next (releasing) reaches the lock's task after it.
async fn follow(
    shared: &Arc<Shared>,
    generation: u64,
    path: &str,
    seen: &watch::Sender<Seen>,
    mut on_asked: Option<OnAsked>,
) {
    let Some(session) = shared.connection.session_of(generation) else {
        return;
    };
    loop {
        match session.client.get_and_watch_data(path).await {
            Ok((data, _, watcher)) => {
                if data == REVOKE_MESSAGE {
                    if let Some(on_asked) = on_asked.take() {
                        on_asked(path);
                    }
                    seen.send_replace(Seen::Asked);
                    return;
                }
                seen.send_replace(Seen::NotAsked);
                if !watch_fired(&session, watcher).await {
                    return;
                }
            }
            // The node is gone: the grant is over (released or lost).
            Err(ZkError::NoNode) => return,
            Err(error) => {
                if !matches!(retry::after(&session, error).await, Ok(true)) {
                    return;
                }
            }
        }
    }
}

/// Writes `__REVOKE__` into the node of every current holder of lock `name`
/// (holders as the configured dialect orders the queue). Returns how many
/// nodes were written; a holder whose node went meanwhile is not counted.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper refuses (e.g. ACLs) or does
/// not answer within the session timeout.
///
/// # Cancellation safety
/// Cancel safe: each write is complete on its own; nothing to clean up.
pub(super) async fn request(shared: &Arc<Shared>, name: &LockName) -> Result<u32, BackendError> {
    let config = shared.connection.config();
    let deadline = Instant::now() + config.session_timeout;
    let parent = config.lock_path(name);
    let asked = until(Some(deadline), async {
        let holders = holder_nodes(shared, &parent, config.dialect, deadline).await?;
        let mut asked = 0u32;
        for node in holders {
            if write_revoke(shared, &format!("{parent}/{node}"), deadline).await? {
                asked = asked.saturating_add(1);
            }
        }
        Ok::<u32, BackendError>(asked)
    })
    .await;
    match asked {
        Ok(result) => result,
        Err(_timeout) => Err(BackendError::Unavailable(format!(
            "ZooKeeper did not answer the revocation request for \"{name}\" within the session timeout"
        ))),
    }
}

/// The names of the nodes under `parent` that hold the lock now.
async fn holder_nodes(
    shared: &Arc<Shared>,
    parent: &str,
    dialect: super::Dialect,
    deadline: Instant,
) -> Result<Vec<String>, BackendError> {
    loop {
        let session = connect(shared, Some(deadline)).await?;
        match session.client.get_children(parent).await {
            Ok((children, _)) => {
                let queue = queue(dialect, &children);
                return Ok((0..queue.len())
                    .filter(|i| holds(&queue, *i))
                    .map(|i| queue[i].node.to_owned())
                    .collect());
            }
            Err(ZkError::NoNode) => return Ok(Vec::new()),
            Err(error) => {
                retry::after(&session, error).await?;
            }
        }
    }
}

/// Writes `__REVOKE__` into the node at `path`; false when it is gone.
async fn write_revoke(
    shared: &Arc<Shared>,
    path: &str,
    deadline: Instant,
) -> Result<bool, BackendError> {
    loop {
        let session = connect(shared, Some(deadline)).await?;
        match session.client.set_data(path, REVOKE_MESSAGE, None).await {
            Ok(_) => return Ok(true),
            Err(ZkError::NoNode) => return Ok(false),
            Err(error) => {
                retry::after(&session, error).await?;
            }
        }
    }
}
