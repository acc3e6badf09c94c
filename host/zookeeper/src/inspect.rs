//! Who holds a lock and who waits: the queue of a lock as ZooKeeper has it,
//! for operators (`wardlock status`, every child of the lock's node) and for
//! guests (`Contention::contenders`, the lock nodes alone) — wardlock's nodes
//! and foreign clients' alike.

use std::sync::Arc;

use tokio::time::Instant;
use zookeeper_client::Error as ZkError;

use super::recipe::{connect, until};
use super::{Shared, ZooKeeperBackend};
use crate::connection::retry;
use crate::recipe::queue::{holds, queue};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Contender, Contenders, Mode, listed_at_most};

/// One child of a lock's node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNode {
    /// The node's name.
    pub node: String,
    /// The lock mode it asks for; `None` for children that are not lock nodes of
    /// the configured dialect (ignored by the recipe).
    pub mode: Option<Mode>,
    /// True if it holds the lock now.
    pub holds: bool,
    /// The ZooKeeper session owning it (ephemeral owner), 0 if persistent.
    pub session: i64,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The data its owner wrote (wardlock: host, process, plugin and instance).
    pub data: String,
}

/// A child of a lock's node as listed, before its data is read.
struct Listed {
    node: String,
    mode: Option<Mode>,
    holds: bool,
}

impl ZooKeeperBackend {
    /// The queue of lock `name`: contenders in order (holders first), then children
    /// that are not lock nodes of this backend's dialect. Empty when nobody holds
    /// or waits.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when ZooKeeper cannot be reached.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn queue(&self, name: &LockName) -> Result<Vec<QueueNode>, BackendError> {
        let shared = super::shard_for(&self.shards, name);
        bounded(shared, name, async {
            let listed = list(shared, name).await?;
            read(shared, name, listed).await
        })
        .await
    }
}

/// The contenders of lock `name` for a session: the first `limit` lock nodes
/// (with their owners' data) and how many there are.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper did not answer within the
/// session timeout; [`BackendError::Refused`] when it refused this host.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn contenders(
    shared: &Arc<Shared>,
    name: &LockName,
    limit: u32,
) -> Result<Contenders, BackendError> {
    bounded(shared, name, async {
        let mut listed = list(shared, name).await?;
        listed.retain(|child| child.mode.is_some());
        let total = u32::try_from(listed.len()).unwrap_or(u32::MAX);
        listed.truncate(listed_at_most(limit));
        let nodes = read(shared, name, listed).await?;
        let listed = nodes
            .into_iter()
            .filter_map(|node| {
                Some(Contender {
                    mode: node.mode?,
                    holds: node.holds,
                    owner: node.data,
                    token: None,
                    node: Some(node.node),
                })
            })
            .collect();
        Ok(Contenders { listed, total })
    })
    .await
}

/// `reading`, given up with `Unavailable` once the session timeout passed.
async fn bounded<T>(
    shared: &Arc<Shared>,
    name: &LockName,
    reading: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    let deadline = Instant::now() + shared.connection.config().session_timeout;
    until(Some(deadline), reading).await.unwrap_or_else(|_| {
        Err(BackendError::Unavailable(format!(
            "ZooKeeper did not list the queue of \"{name}\" within the session timeout"
        )))
    })
}

/// The children of lock `name`'s node: contenders in queue order (holders
/// first), then the others sorted by name.
async fn list(shared: &Arc<Shared>, name: &LockName) -> Result<Vec<Listed>, BackendError> {
    let config = shared.connection.config();
    let parent = config.lock_path(name);
    let children = loop {
        let session = connect(shared, None).await?;
        match session.client.list_children(&parent).await {
            Ok(children) => break children,
            Err(ZkError::NoNode) => return Ok(Vec::new()),
            Err(error) => {
                retry::after(&session, error).await?;
            }
        }
    };
    let contenders = queue(config.dialect, &children);
    let mut listed: Vec<Listed> = contenders
        .iter()
        .enumerate()
        .map(|(i, c)| Listed {
            node: c.node.to_owned(),
            mode: Some(if c.exclusive {
                Mode::Exclusive
            } else {
                Mode::Shared
            }),
            holds: holds(&contenders, i),
        })
        .collect();
    let mut others: Vec<&String> = children
        .iter()
        .filter(|c| config.dialect.contender(c).is_none())
        .collect();
    others.sort();
    listed.extend(others.into_iter().map(|node| Listed {
        node: node.clone(),
        mode: None,
        holds: false,
    }));
    Ok(listed)
}

/// The data and stat of each listed child; a child gone since the listing
/// is left out.
async fn read(
    shared: &Arc<Shared>,
    name: &LockName,
    listed: Vec<Listed>,
) -> Result<Vec<QueueNode>, BackendError> {
    let parent = shared.connection.config().lock_path(name);
    let mut nodes = Vec::with_capacity(listed.len());
    for child in listed {
        let path = format!("{parent}/{}", child.node);
        let read = loop {
            let session = connect(shared, None).await?;
            match session.client.get_data(&path).await {
                Ok(read) => break Some(read),
                Err(ZkError::NoNode) => break None,
                Err(error) => {
                    retry::after(&session, error).await?;
                }
            }
        };
        if let Some((data, stat)) = read {
            nodes.push(QueueNode {
                node: child.node,
                mode: child.mode,
                holds: child.holds,
                session: stat.ephemeral_owner,
                created_ms: stat.ctime,
                data: String::from_utf8_lossy(&data).into_owned(),
            });
        }
    }
    Ok(nodes)
}
