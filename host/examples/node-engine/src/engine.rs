//! The engine side of host-local hand-off: the host's one node per lock, as
//! `wardlock_backend::handoff` asks for it ([`NodeEngine`]), and the host's
//! session with the store as a hand-off task sees it ([`NodeSession`]).
//!
//! The lock recipe is ZooKeeper's read/write lock: a contender creates a
//! sequential node (`write-` or `read-`) in the lock's directory and holds
//! the lock when no node ahead of it conflicts (any node, for a writer; a
//! writer, for a reader); otherwise it watches the nearest conflicting node
//! ahead and looks again when that one goes. The grant's token is the node's
//! creation number, which rises with every node in the store.

use std::sync::{Arc, Mutex, Weak};

use tokio::time::Instant;
use wardlock_backend::handoff::{
    LocalLocks, NodeEngine, NodeFuture, NodeRequest, NodeSession, OwnedNode, SessionHealth,
    WatchFuture, until,
};
use wardlock_backend::liveness::Liveness;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

use crate::NodeConfig;
use crate::store::{Child, Store, StoreError};

/// What every lock session of one backend (one host) shares.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) config: NodeConfig,
    /// The host-local lock tasks, by lock name.
    pub(crate) local_locks: LocalLocks,
    /// The host's current session with the store, if one was opened.
    current: Mutex<Option<Arc<HostSession>>>,
}

impl Shared {
    pub(crate) fn new(store: Store, config: NodeConfig) -> Self {
        Shared {
            store,
            config,
            local_locks: LocalLocks::default(),
            current: Mutex::new(None),
        }
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<Arc<HostSession>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The host's session, opening the next one (the next generation) when
    /// there is none or the last one ended. Opens lazily, on the first lock
    /// request, as a backend connects.
    pub(crate) fn session(&self) -> Arc<HostSession> {
        let mut current = self.current();
        if let Some(session) = current.as_ref().filter(|s| !s.liveness.is_ended()) {
            return session.clone();
        }
        let generation = current.as_ref().map_or(1, |s| s.generation + 1);
        let session = HostSession::open(self.store.clone(), generation, &self.config);
        *current = Some(session.clone());
        session
    }

    /// The session of `generation` while it is the current one and lives.
    pub(crate) fn session_of(&self, generation: u64) -> Option<Arc<HostSession>> {
        let current = self.current();
        let session = current.as_ref()?;
        (session.generation == generation && !session.liveness.is_ended()).then(|| session.clone())
    }

    /// The current session, without opening one.
    pub(crate) fn latest(&self) -> Option<Arc<HostSession>> {
        self.current().clone()
    }
}

/// The host's session with the store: one generation of the backend. Its
/// [`Liveness`] is the session clock: "last heard" is the send time of the
/// last answered ping, so the host stops vouching for its nodes (suspended,
/// then lost) no later than the store could have expired them.
pub(crate) struct HostSession {
    pub(crate) generation: u64,
    /// The store's session id.
    pub(crate) id: u64,
    pub(crate) liveness: Liveness,
    store: Store,
}

impl HostSession {
    /// Opens a session with the store and starts its heartbeat (on the
    /// current tokio runtime).
    fn open(store: Store, generation: u64, config: &NodeConfig) -> Arc<Self> {
        let sent = Instant::now();
        let id = store.open_session(config.session_timeout);
        let session = Arc::new(HostSession {
            generation,
            id,
            liveness: Liveness::new(config.session_timeout, sent),
            store,
        });
        tokio::spawn(heartbeat(Arc::downgrade(&session)));
        session
    }

    /// Tells the clock the store said the session is over.
    pub(crate) fn expired(&self) {
        self.liveness.end();
    }
}

impl Drop for HostSession {
    /// Nobody uses the session any more (the backend is gone, or a later
    /// generation replaced it): end it so its nodes go at once.
    fn drop(&mut self) {
        self.store.close_session(self.id);
    }
}

/// Pings the store every tenth of the session timeout while anyone holds the
/// session; each answered ping moves the clock.
async fn heartbeat(session: Weak<HostSession>) {
    let interval = match session.upgrade() {
        Some(session) => session.liveness.heartbeat_interval(),
        None => return,
    };
    loop {
        tokio::time::sleep(interval).await;
        let Some(session) = session.upgrade() else {
            return;
        };
        let sent = Instant::now();
        match session.store.ping(session.id) {
            Ok(()) => session.liveness.heard(sent),
            Err(StoreError::SessionExpired) => session.expired(),
        }
        // The in-process store is always reachable: "connected".
        if session.liveness.health(true, Instant::now()) == SessionHealth::Ended {
            return;
        }
    }
}

impl NodeSession for HostSession {
    fn health(&self) -> SessionHealth {
        self.liveness.health(true, Instant::now())
    }

    fn until_over(self: Arc<Self>) -> WatchFuture {
        Box::pin(async move { self.liveness.until_ended().await })
    }
}

/// One backend's store, as hand-off tasks use it.
pub(crate) struct StoreNodes {
    pub(crate) shared: Arc<Shared>,
}

impl NodeEngine for StoreNodes {
    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn acquire_node(&self, request: NodeRequest) -> NodeFuture {
        Box::pin(lock_node(self.shared.clone(), request))
    }

    fn session(&self, generation: u64) -> Option<Arc<dyn NodeSession>> {
        let session = self.shared.session_of(generation)?;
        Some(session)
    }

    fn release_node(&self, node: OwnedNode) {
        // The store answers at once; a remote engine deletes in the
        // background and retries until the node's session ends.
        self.shared.store.delete(&node.path);
    }

    fn remote_contender(&self, name: &LockName, node: &OwnedNode, mode: Mode) -> WatchFuture {
        let Some(session) = self.shared.session_of(node.generation) else {
            return Box::pin(std::future::pending());
        };
        let (store, dir, ours) = (self.shared.store.clone(), dir_of(name), node.path.clone());
        Box::pin(async move {
            tokio::select! {
                () = contender_behind(&store, &dir, &ours, mode) => {}
                // The task learns of the end from the session itself.
                () = session.liveness.until_ended() => std::future::pending().await,
            }
        })
    }
}

/// The directory of `name`'s queue.
pub(crate) fn dir_of(name: &LockName) -> String {
    format!("/locks/{name}")
}

/// A node's name prefix in `mode`.
fn prefix(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "write-",
        Mode::Shared => "read-",
    }
}

/// The mode of a node, by its name.
fn mode_of(child: &Child) -> Mode {
    if child.name().starts_with("read-") {
        Mode::Shared
    } else {
        Mode::Exclusive
    }
}

/// Whether a node in `theirs` excludes one in `ours`.
fn conflicts(ours: Mode, theirs: Mode) -> bool {
    ours == Mode::Exclusive || theirs == Mode::Exclusive
}

/// Deletes a queued node unless disarmed: a wait that timed out, was tried
/// once, or was dropped (cancel safety) leaves nothing queued.
struct Queued {
    store: Store,
    path: Option<String>,
}

impl Drop for Queued {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            self.store.delete(&path);
        }
    }
}

/// The host's node for a lock, as `request` says (the recipe above). A
/// session that ends under a waiting node takes the node with it: the
/// request queues again on the next session.
///
/// # Errors
/// `Timeout` past the request's deadline.
///
/// # Cancellation safety
/// Cancel safe: a dropped future deletes its node.
async fn lock_node(
    shared: Arc<Shared>,
    request: NodeRequest,
) -> Result<Option<OwnedNode>, BackendError> {
    let (name, mode, deadline, wait) = (&request.name, request.mode, request.deadline, request.wait);
    let dir = dir_of(name);
    loop {
        let session = shared.session();
        let ours = match shared
            .store
            .create_sequential(&dir, prefix(mode), session.id)
        {
            Ok(ours) => ours,
            Err(StoreError::SessionExpired) => {
                session.expired();
                continue;
            }
        };
        let mut queued = Queued {
            store: shared.store.clone(),
            path: Some(ours.path.clone()),
        };
        loop {
            let children = shared.store.children(&dir);
            let Some(at) = children.iter().position(|c| c.path == ours.path) else {
                // Gone with its session: queue again.
                break;
            };
            let blocker = children[..at]
                .iter()
                .rev()
                .find(|c| conflicts(mode, mode_of(c)));
            let Some(blocker) = blocker else {
                queued.path = None;
                return Ok(Some(OwnedNode {
                    prefix: ours.path.clone(),
                    path: ours.path,
                    generation: session.generation,
                    token: ours.created,
                }));
            };
            if !wait {
                return Ok(None);
            }
            let gone = shared.store.watch_gone(&blocker.path);
            tokio::select! {
                passed = until(deadline, gone) => passed?,
                () = session.liveness.until_ended() => break,
            }
        }
    }
}

/// Resolves when a node that conflicts with ours (held in `mode`) is in
/// `dir`: a contender of another host (this host has one node per lock).
async fn contender_behind(store: &Store, dir: &str, ours: &str, mode: Mode) {
    loop {
        let (children, changed) = store.children_and_watch(dir);
        if children
            .iter()
            .any(|c| c.path != ours && conflicts(mode, mode_of(c)))
        {
            return;
        }
        changed.await;
    }
}
