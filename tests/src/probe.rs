//! Observing a lock's queue from outside, as events: the in-memory backend's own
//! observation API, or a separate ZooKeeper client watching the lock's node.

use std::time::Duration;

use async_trait::async_trait;
use wardlock_etcd::EtcdBackend;
use wardlock_host::LockBackend;
use wardlock_host::LockName;
use wardlock_postgres::PostgresBackend;
use wardlock_valkey::ValkeyBackend;
use wardlock_zookeeper::ZooKeeperBackend;
use zookeeper_client::{Client, Error as ZkError};

use crate::{TEST_WAIT_LIMIT, name};

pub use wardlock_conformance::{MemoryProbe, Probe};

/// A backend whose guests queue in host-local hand-off tasks, which count
/// them (ZooKeeper with hand-off on; etcd always).
#[async_trait]
pub trait LocalContenders: Send + Sync {
    /// How many of the host's guests hold or wait for `lock`.
    async fn local_contenders(&self, lock: &LockName) -> usize;

    /// What the host's task for `lock` holds, queues and waits for, read
    /// from its state (not asked of the task).
    fn describe_local(&self, lock: &LockName) -> String;
}

#[async_trait]
impl LocalContenders for ZooKeeperBackend {
    async fn local_contenders(&self, lock: &LockName) -> usize {
        ZooKeeperBackend::local_contenders(self, lock).await
    }

    fn describe_local(&self, lock: &LockName) -> String {
        ZooKeeperBackend::describe_local(self, lock)
    }
}

/// With nobody left at the host's task, the host's key must be gone from
/// etcd too (its delete runs in the background): then the keys still there
/// are counted.
#[async_trait]
impl LocalContenders for EtcdBackend {
    async fn local_contenders(&self, lock: &LockName) -> usize {
        match EtcdBackend::local_contenders(self, lock).await {
            0 => self.queue(lock).await.map_or(0, |keys| keys.len()),
            local => local,
        }
    }

    fn describe_local(&self, lock: &LockName) -> String {
        EtcdBackend::describe_local(self, lock)
    }
}

/// With nobody left at the host's task, the host's queue member must be
/// gone from the server too (its removal runs in the background): then the
/// members still queued are counted.
#[async_trait]
impl LocalContenders for ValkeyBackend {
    async fn local_contenders(&self, lock: &LockName) -> usize {
        match ValkeyBackend::local_contenders(self, lock).await {
            0 => self.queued(lock).await.map_or(0, |members| members.len()),
            local => local,
        }
    }

    fn describe_local(&self, lock: &LockName) -> String {
        ValkeyBackend::describe_local(self, lock)
    }
}

/// With nobody left at the host's task, the host's advisory lock must be
/// gone from the server too (its unlock runs in the background): then the
/// server's holders and waiters of the key are counted.
#[async_trait]
impl LocalContenders for PostgresBackend {
    async fn local_contenders(&self, lock: &LockName) -> usize {
        match PostgresBackend::local_contenders(self, lock).await {
            0 => {
                let session = self.open_session("probe");
                session
                    .contention()
                    .expect("contention")
                    .contenders(lock, 1024)
                    .await
                    .map_or(0, |contenders| contenders.total as usize)
            }
            local => local,
        }
    }

    fn describe_local(&self, lock: &LockName) -> String {
        PostgresBackend::describe_local(self, lock)
    }
}

#[async_trait]
impl<B: LocalContenders> LocalContenders for std::sync::Arc<B> {
    async fn local_contenders(&self, lock: &LockName) -> usize {
        B::local_contenders(self, lock).await
    }

    fn describe_local(&self, lock: &LockName) -> String {
        B::describe_local(self, lock)
    }
}

/// How long one count of a host's local contenders may take.
const ASK_LIMIT: Duration = Duration::from_secs(10);

/// Probe of a backend with host-local hand-off: its guests queue in the
/// host's task, not as nodes or keys of their own.
pub struct HandoffProbe<B>(pub B);

#[async_trait]
impl<B: LocalContenders> Probe for HandoffProbe<B> {
    async fn wait_len(&self, lock: &str, len: usize) {
        // The task's count is asked for, not pushed: ask again until it fits
        // (bounded).
        // Each count is bounded too: a task that answers nothing is named,
        // with its state, rather than waited for.
        let started = tokio::time::Instant::now();
        let lock = name(lock);
        loop {
            let asked = self.0.local_contenders(&lock);
            let Ok(now) = tokio::time::timeout(ASK_LIMIT, asked).await else {
                panic!(
                    "{lock}: the count of contenders (the host's task's; on etcd and PostgreSQL \
                     the lock service's once the task has none) got no answer within \
                     {ASK_LIMIT:?}: {}",
                    self.0.describe_local(&lock)
                );
            };
            if now == len {
                return;
            }
            assert!(
                started.elapsed() < TEST_WAIT_LIMIT,
                "{lock}: {now} local contenders, expected {len}: {}",
                self.0.describe_local(&lock)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Probe of locks under `root` on a ZooKeeper server, through its own session.
pub struct ZkProbe {
    pub client: Client,
    pub root: String,
}

impl ZkProbe {
    /// Connects a probe session.
    pub async fn connect(address: &str, root: &str) -> ZkProbe {
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(address)
            .await
            .expect("probe connects to ZooKeeper");
        ZkProbe {
            client,
            root: root.to_owned(),
        }
    }

    /// The children of `lock`'s node (empty if it does not exist). Tests keep lock
    /// names that are not nested, so every child is a contender.
    pub async fn contenders(&self, lock: &str) -> Vec<String> {
        match self.client.list_children(&self.path(lock)).await {
            Ok(children) => children,
            Err(ZkError::NoNode) => Vec::new(),
            Err(error) => panic!("probe cannot list {lock}: {error}"),
        }
    }

    /// Dumps every node below the root, for the message of a check that ran
    /// out of time ([`crate::conformance::Subject::server_state`]).
    pub fn node_dump(
        &self,
    ) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync + 'static
    {
        let probe = std::sync::Arc::new(ZkProbe {
            client: self.client.clone(),
            root: self.root.clone(),
        });
        move || {
            let probe = probe.clone();
            Box::pin(async move {
                format!(
                    "ZooKeeper nodes under {}:\n{}",
                    probe.root,
                    probe.all_nodes().await.join("\n")
                )
            })
        }
    }

    /// Every node below the root, depth first (root excluded).
    pub async fn all_nodes(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(path) = stack.pop() {
            let children = match self.client.list_children(&path).await {
                Ok(children) => children,
                Err(ZkError::NoNode) => continue,
                Err(error) => panic!("probe cannot list {path}: {error}"),
            };
            for child in children {
                let child = format!("{path}/{child}");
                found.push(child.clone());
                stack.push(child);
            }
        }
        found
    }

    fn path(&self, lock: &str) -> String {
        format!("{}/{}", self.root, name(lock))
    }

    async fn wait_len_unguarded(&self, lock: &str, len: usize) {
        let path = self.path(lock);
        loop {
            match self.client.get_and_watch_children(&path).await {
                Ok((children, _, watcher)) => {
                    if children.len() == len {
                        return;
                    }
                    watcher.changed().await;
                }
                Err(ZkError::NoNode) => {
                    if len == 0 {
                        return;
                    }
                    match self.client.check_and_watch_stat(&path).await {
                        Ok((Some(_), _)) => continue,
                        Ok((None, watcher)) => {
                            watcher.changed().await;
                        }
                        Err(error) => panic!("probe cannot watch {path}: {error}"),
                    }
                }
                Err(error) => panic!("probe cannot watch {path}: {error}"),
            }
        }
    }
}

#[async_trait]
impl Probe for ZkProbe {
    async fn wait_len(&self, lock: &str, len: usize) {
        if tokio::time::timeout(TEST_WAIT_LIMIT, self.wait_len_unguarded(lock, len))
            .await
            .is_err()
        {
            panic!(
                "lock {lock} never reached {len} contenders: {:?}",
                self.contenders(lock).await
            );
        }
    }
}
