//! `zk-floor`: the least work a textbook ZooKeeper lock needs, on the raw
//! `zookeeper-client`, every request awaited before the next is sent:
//!
//! 1. `create` `<lock>/write-` or `read-` EPHEMERAL_SEQUENTIAL;
//! 2. `get_children` of `<lock>`; held when no conflicting node sorts before ours
//!    (a writer: none at all; a reader: no writer);
//! 3. otherwise `get_data` with a watch on the node that must go first (the one
//!    right before ours; for a reader the nearest writer), wait, go to 2;
//! 4. release: `delete`.
//!
//! Each client has its own session, as separate processes would. Lock parents
//! are persistent nodes created before the measurement (so no request goes to
//! re-creating them) under `/wardlock-bench-floor`, and removed afterwards.

use std::time::Duration;

use anyhow::{Context, bail};
use wardlock_host::{LockName, Mode};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use super::native::Locker;

/// Where the floor's lock parents live.
pub(crate) const FLOOR_ROOT: &str = "/wardlock-bench-floor";

const WRITE_PREFIX: &str = "write-";
const READ_PREFIX: &str = "read-";

/// One textbook lock client: one ZooKeeper session.
pub(crate) struct FloorClient {
    client: Client,
    /// Path of the node held, if any.
    held: Option<String>,
}

impl FloorClient {
    /// Connects a new session.
    ///
    /// # Errors
    /// When ZooKeeper cannot be reached.
    pub(crate) async fn connect(address: &str, session_timeout: Duration) -> anyhow::Result<Self> {
        let client = Client::connector()
            .with_session_timeout(session_timeout)
            .connect(address)
            .await
            .with_context(|| format!("zk-floor cannot connect to {address}"))?;
        Ok(FloorClient { client, held: None })
    }

    /// The session.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Creates the persistent parent of `lock` (ancestors as containers).
    ///
    /// # Errors
    /// When ZooKeeper refuses.
    pub(crate) async fn prepare(&self, lock: &LockName) -> anyhow::Result<()> {
        let parent = parent_path(lock);
        let (ancestors, _) = parent.rsplit_once('/').context("absolute path")?;
        let container = CreateMode::Container.with_acls(Acls::anyone_all());
        self.client.mkdir(ancestors, &container).await?;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match self.client.create(&parent, &[], &persistent).await {
            Ok(_) | Err(ZkError::NodeExists) => Ok(()),
            Err(error) => Err(error).with_context(|| format!("creating {parent}")),
        }
    }

    /// Deletes every node under [`FLOOR_ROOT`] (at the end of a run).
    ///
    /// # Errors
    /// When ZooKeeper refuses.
    pub(crate) async fn remove_all(&self) -> anyhow::Result<()> {
        let mut stack = vec![FLOOR_ROOT.to_owned()];
        let mut found = Vec::new();
        while let Some(path) = stack.pop() {
            match self.client.list_children(&path).await {
                Ok(children) => stack.extend(children.iter().map(|c| format!("{path}/{c}"))),
                Err(ZkError::NoNode) => continue,
                Err(error) => return Err(error).with_context(|| format!("listing {path}")),
            }
            found.push(path);
        }
        // Children were found after their parents: delete deepest first.
        for path in found.iter().rev() {
            match self.client.delete(path, None).await {
                Ok(()) | Err(ZkError::NoNode) => {}
                Err(error) => return Err(error).with_context(|| format!("deleting {path}")),
            }
        }
        Ok(())
    }
}

impl Locker for FloorClient {
    async fn acquire(&mut self, lock: &LockName, mode: Mode) -> anyhow::Result<()> {
        let parent = parent_path(lock);
        let prefix = match mode {
            Mode::Exclusive => WRITE_PREFIX,
            Mode::Shared => READ_PREFIX,
        };
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = self
            .client
            .create(&format!("{parent}/{prefix}"), &[], &options)
            .await
            .with_context(|| format!("zk-floor create under {parent}"))?;
        let node = format!("{prefix}{sequence}");
        loop {
            let children = self.client.list_children(&parent).await?;
            let blocker = match blocker(&children, &node, mode)? {
                None => break,
                Some(blocker) => format!("{parent}/{blocker}"),
            };
            match self.client.get_and_watch_data(&blocker).await {
                Ok((_, _, watcher)) => {
                    watcher.changed().await;
                }
                Err(ZkError::NoNode) => {}
                Err(error) => return Err(error).context("zk-floor watch"),
            }
        }
        self.held = Some(format!("{parent}/{node}"));
        Ok(())
    }

    async fn release(&mut self) -> anyhow::Result<()> {
        let path = self.held.take().context("release without a lock")?;
        self.client.delete(&path, None).await?;
        Ok(())
    }
}

fn parent_path(lock: &LockName) -> String {
    format!("{FLOOR_ROOT}/{lock}")
}

/// The node `node` must wait for, or `None` when it holds the lock.
fn blocker<'a>(children: &'a [String], node: &str, mode: Mode) -> anyhow::Result<Option<&'a str>> {
    let mut contenders: Vec<&str> = children
        .iter()
        .map(String::as_str)
        .filter(|c| c.starts_with(WRITE_PREFIX) || c.starts_with(READ_PREFIX))
        .collect();
    // The 10-digit sequence ZooKeeper appends orders the queue.
    contenders.sort_by_key(|c| &c[c.len().saturating_sub(10)..]);
    let Some(index) = contenders.iter().position(|c| *c == node) else {
        bail!("zk-floor node {node} vanished");
    };
    let ahead = &contenders[..index];
    Ok(match mode {
        Mode::Exclusive => ahead.last().copied(),
        Mode::Shared => ahead
            .iter()
            .rev()
            .find(|c| c.starts_with(WRITE_PREFIX))
            .copied(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_wait_for_the_nearest_writer_writers_for_their_predecessor() {
        let children: Vec<String> = ["read-0000000003", "write-0000000002", "read-0000000001"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            blocker(&children, "read-0000000001", Mode::Shared).unwrap(),
            None
        );
        assert_eq!(
            blocker(&children, "read-0000000003", Mode::Shared).unwrap(),
            Some("write-0000000002")
        );
        assert_eq!(
            blocker(&children, "write-0000000002", Mode::Exclusive).unwrap(),
            Some("read-0000000001")
        );
        assert!(blocker(&children, "write-0000000009", Mode::Exclusive).is_err());
    }
}
