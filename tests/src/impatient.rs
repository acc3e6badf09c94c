//! A mutant engine on ZooKeeper, for showing that the history checker of the
//! chaos runs catches what it must: a grant that does not wait for its
//! predecessor.
//!
//! An engine of its own (the textbook recipe on the raw client: one
//! EPHEMERAL_SEQUENTIAL node per acquire, a watch on the node before it), not
//! a wrapper of wardlock's ZooKeeper engine: a wrapper would be a second type
//! that forwards the session trait, which only the observer wrapper does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use wardlock_host::backend::{Request, StatusChange, settled};
use wardlock_host::{BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

/// The mutant: every lock is exclusive; an acquire queues a node and waits
/// at most [`Impatient::PATIENCE`] for the node before it to go, then
/// grants anyway with token 0 (a made-up grant: a second holder, and a
/// token that does not rise). A grant that did wait has its node's `czxid`
/// as its token. Clones share one client, so several "hosts" contend.
#[derive(Clone)]
pub struct Impatient {
    client: Arc<Client>,
    root: String,
}

impl Impatient {
    /// How long an acquire waits for its predecessor.
    pub const PATIENCE: Duration = Duration::from_millis(2);

    /// The mutant on the ZooKeeper server at `address`, its locks under
    /// `root` (made here).
    ///
    /// # Panics
    /// When the server cannot be reached or `root` cannot be made.
    pub async fn connect(address: &str, root: &str) -> Impatient {
        let client = Client::connect(address)
            .await
            .expect("connect to ZooKeeper");
        let mut path = String::new();
        for part in root.split('/').filter(|p| !p.is_empty()) {
            path = format!("{path}/{part}");
            make_node(&client, &path).await.expect("the mutant's root");
        }
        Impatient {
            client: Arc::new(client),
            root: path,
        }
    }
}

/// Makes the persistent node `path` unless it stands.
async fn make_node(client: &Client, path: &str) -> Result<(), ZkError> {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.create(path, b"", &options).await {
        Ok(_) | Err(ZkError::NodeExists) => Ok(()),
        Err(error) => Err(error),
    }
}

fn unavailable(error: ZkError) -> BackendError {
    BackendError::Unavailable(format!("the mutant's ZooKeeper: {error}"))
}

impl LockBackend for Impatient {
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(ImpatientSession {
            engine: self.clone(),
            grants: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        })
    }

    fn kind(&self) -> &'static str {
        "impatient"
    }
}

struct ImpatientSession {
    engine: Impatient,
    /// The session's grants (real and made up) and their nodes' paths.
    grants: Mutex<HashMap<GrantId, String>>,
    next: AtomicU64,
}

impl ImpatientSession {
    fn grants(&self) -> MutexGuard<'_, HashMap<GrantId, String>> {
        self.grants.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, path: String, token: u64) -> Grant {
        let id = GrantId(self.next.fetch_add(1, Ordering::SeqCst));
        self.grants().insert(id, path);
        Grant { id, token }
    }

    /// Deletes `path` in the background (`release` cannot await).
    fn delete(&self, path: String) {
        let client = self.engine.client.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { client.delete(&path, None).await });
        }
    }

    /// Queues a node for `name` and answers once it is first, or once
    /// [`Impatient::PATIENCE`] has passed (token 0).
    async fn queue(&self, name: &str) -> Result<Grant, BackendError> {
        let client = &self.engine.client;
        let parent = format!("{}/{}", self.engine.root, name.replace('/', "_"));
        make_node(client, &parent).await.map_err(unavailable)?;
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (stat, sequence) = client
            .create(&format!("{parent}/lock-"), b"", &options)
            .await
            .map_err(unavailable)?;
        let node = format!("lock-{sequence}");
        let path = format!("{parent}/{node}");
        let patience = tokio::time::sleep(Impatient::PATIENCE);
        tokio::pin!(patience);
        loop {
            let mut children = client.list_children(&parent).await.map_err(unavailable)?;
            children.sort();
            let Some(place) = children.iter().position(|c| *c == node) else {
                return Err(BackendError::Lost);
            };
            if place == 0 {
                return Ok(self.record(path, u64::try_from(stat.czxid).unwrap_or(0)));
            }
            let before = format!("{parent}/{}", children[place - 1]);
            let (standing, watcher) = client
                .check_and_watch_stat(&before)
                .await
                .map_err(unavailable)?;
            if standing.is_none() {
                continue;
            }
            tokio::select! {
                _ = watcher.changed() => {}
                () = &mut patience => break,
            }
        }
        Ok(self.record(path, 0))
    }
}

#[async_trait]
impl LockSession for ImpatientSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        _timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        self.queue(request.name.as_str()).await
    }

    /// The mutant's try is its acquire: it never declines.
    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        self.queue(request.name.as_str()).await.map(Some)
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let path = self
            .grants()
            .remove(&grant)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        self.delete(path);
        Ok(())
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        if self.grants().contains_key(&grant) {
            GrantStatus::Held
        } else {
            GrantStatus::Released
        }
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        settled(self.status(grant), seen)
    }
}

impl Drop for ImpatientSession {
    fn drop(&mut self) {
        let paths: Vec<String> = self.grants().drain().map(|(_, path)| path).collect();
        for path in paths {
            self.delete(path);
        }
    }
}
