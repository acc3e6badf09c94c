//! Who holds a lock and who waits: the queue of a lock as ZooKeeper has it, for
//! operators (`wardlock status`) — wardlock's nodes and foreign clients' alike.

use zookeeper_client::Error as ZkError;

use super::ZooKeeperBackend;
use super::queue::{holds, queue};
use crate::backend::{BackendError, Mode};
use crate::name::LockName;

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
        let session = super::shard_for(&self.shards, name).session().await?;
        let config = self.config();
        let parent = config.lock_path(name);
        let unavailable =
            |e: ZkError| BackendError::Unavailable(format!("cannot read {parent}: {e}"));
        let children = match session.client.list_children(&parent).await {
            Ok(children) => children,
            Err(ZkError::NoNode) => return Ok(Vec::new()),
            Err(error) => return Err(unavailable(error)),
        };
        let contenders = queue(config.dialect, &children);
        let mut ordered: Vec<(String, Option<Mode>, bool)> = contenders
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mode = if c.exclusive {
                    Mode::Exclusive
                } else {
                    Mode::Shared
                };
                (c.node.to_owned(), Some(mode), holds(&contenders, i))
            })
            .collect();
        let mut others: Vec<String> = children
            .iter()
            .filter(|c| config.dialect.contender(c).is_none())
            .cloned()
            .collect();
        others.sort();
        ordered.extend(others.into_iter().map(|n| (n, None, false)));
        let mut nodes = Vec::with_capacity(ordered.len());
        for (node, mode, holds) in ordered {
            // A node may go between the listing and this read: skip it then.
            match session.client.get_data(&format!("{parent}/{node}")).await {
                Ok((data, stat)) => nodes.push(QueueNode {
                    node,
                    mode,
                    holds,
                    session: stat.ephemeral_owner,
                    created_ms: stat.ctime,
                    data: String::from_utf8_lossy(&data).into_owned(),
                }),
                Err(ZkError::NoNode) => continue,
                Err(error) => return Err(unavailable(error)),
            }
        }
        Ok(nodes)
    }
}
