//! A tiny lock service in this process, standing in for a remote one: what
//! the engine talks to, as `wardlock-zookeeper` talks to ZooKeeper.
//!
//! It keeps what a ZooKeeper-style lock recipe needs and nothing more:
//! - **sessions**: a client opens one with a timeout and pings it; the store
//!   ends a session that went silent for its timeout (or one it is told to
//!   expire), and every node of an ended session is deleted;
//! - **sequential nodes** in directories: `create_sequential(dir, "write-",
//!   session)` makes `dir/write-0000000007`, numbered in creation order within
//!   the directory, stamped with the store's transaction number (`created`,
//!   ZooKeeper's czxid), which rises with every create in the whole store;
//! - **watches**: on one node's deletion (a waiter watches its predecessor,
//!   so a release wakes one waiter, not a herd) and on a directory's children
//!   (a holder notices a contender queueing behind it).
//!
//! Every call is answered at once, under one mutex: the store is a model of
//! the service, not a server. A `Store` is cheap to clone; clones are the
//! same store, so two backends on one store are two hosts on one service.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Resolves once, when what it watches happened.
pub type Watch = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Why the store refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError {
    /// The session is over (closed, or expired by the store): its nodes are
    /// gone, and a client must open a new one.
    SessionExpired,
}

/// A node of a directory, as [`Store::children`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    /// Its full path: the directory, `/`, the prefix it was created with and
    /// its sequence number (`/locks/a/write-0000000007`).
    pub path: String,
    /// The transaction number that created it: rises with every create in
    /// the store, so it orders nodes across directories too.
    pub created: u64,
    /// The session it lives in (it is deleted when that ends).
    pub session: u64,
}

impl Child {
    /// Its name within its directory (`write-0000000007`).
    pub fn name(&self) -> &str {
        self.path
            .rsplit_once('/')
            .map_or(&self.path, |(_, name)| name)
    }
}

/// A node: its child entry, and a channel whose sender goes with the node
/// (which wakes every watch on its deletion).
struct Node {
    child: Child,
    gone: watch::Sender<()>,
}

/// A directory: its nodes by sequence number, and a channel sent to on every
/// change of its children (and dropped with the directory).
struct Dir {
    nodes: BTreeMap<u64, Node>,
    next_sequence: u64,
    changed: watch::Sender<()>,
}

struct Session {
    timeout: Duration,
    last_ping: Instant,
}

#[derive(Default)]
struct State {
    last_transaction: u64,
    last_session: u64,
    sessions: HashMap<u64, Session>,
    dirs: HashMap<String, Dir>,
}

impl State {
    /// Ends every session silent for its timeout at `now`.
    fn expire_silent(&mut self, now: Instant) {
        let silent: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.last_ping) >= s.timeout)
            .map(|(id, _)| *id)
            .collect();
        for id in silent {
            self.end_session(id);
        }
    }

    /// Ends session `id` and deletes its nodes.
    fn end_session(&mut self, id: u64) {
        if self.sessions.remove(&id).is_none() {
            return;
        }
        let paths: Vec<String> = self
            .dirs
            .values()
            .flat_map(|dir| dir.nodes.values())
            .filter(|node| node.child.session == id)
            .map(|node| node.child.path.clone())
            .collect();
        for path in paths {
            self.delete(&path);
        }
    }

    fn live(&mut self, session: u64) -> Result<&mut Session, StoreError> {
        self.expire_silent(Instant::now());
        self.sessions
            .get_mut(&session)
            .ok_or(StoreError::SessionExpired)
    }

    fn delete(&mut self, path: &str) -> bool {
        let Some((dir_path, sequence)) = split(path) else {
            return false;
        };
        let Some(dir) = self.dirs.get_mut(dir_path) else {
            return false;
        };
        if dir.nodes.remove(&sequence).is_none() {
            return false;
        }
        dir.changed.send_replace(());
        if dir.nodes.is_empty() {
            self.dirs.remove(dir_path);
        }
        true
    }
}

/// A path's directory and its node's sequence number (the name's last ten
/// digits).
fn split(path: &str) -> Option<(&str, u64)> {
    let (dir, name) = path.rsplit_once('/')?;
    let digits = name.get(name.len().checked_sub(10)?..)?;
    Some((dir, digits.parse().ok()?))
}

/// The in-process lock service. Clones share it.
#[derive(Clone, Default)]
pub struct Store {
    state: Arc<Mutex<State>>,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Store::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a session the store ends after `timeout` without a ping.
    pub fn open_session(&self, timeout: Duration) -> u64 {
        let mut state = self.state();
        state.last_session += 1;
        let id = state.last_session;
        let last_ping = Instant::now();
        state.sessions.insert(id, Session { timeout, last_ping });
        id
    }

    /// Keeps `session` alive.
    ///
    /// # Errors
    /// [`StoreError::SessionExpired`] when it is over.
    pub fn ping(&self, session: u64) -> Result<(), StoreError> {
        self.state().live(session)?.last_ping = Instant::now();
        Ok(())
    }

    /// Ends `session` (its client is done with it): its nodes go at once.
    pub fn close_session(&self, session: u64) {
        self.state().end_session(session);
    }

    /// Ends `session` as if it went silent for its timeout (a test's fault:
    /// the host's nodes are gone, and the host learns it at its next call or
    /// ping).
    pub fn expire_session(&self, session: u64) {
        self.state().end_session(session);
    }

    /// Creates the node `dir/<prefix><sequence>` in `session`.
    ///
    /// # Errors
    /// [`StoreError::SessionExpired`] when the session is over.
    pub fn create_sequential(
        &self,
        dir: &str,
        prefix: &str,
        session: u64,
    ) -> Result<Child, StoreError> {
        let mut state = self.state();
        state.live(session)?;
        state.last_transaction += 1;
        let created = state.last_transaction;
        let dir_entry = state.dirs.entry(dir.to_owned()).or_insert_with(|| Dir {
            nodes: BTreeMap::new(),
            next_sequence: 0,
            changed: watch::Sender::new(()),
        });
        let sequence = dir_entry.next_sequence;
        dir_entry.next_sequence += 1;
        let child = Child {
            path: format!("{dir}/{prefix}{sequence:010}"),
            created,
            session,
        };
        let node = Node {
            child: child.clone(),
            gone: watch::Sender::new(()),
        };
        dir_entry.nodes.insert(sequence, node);
        dir_entry.changed.send_replace(());
        Ok(child)
    }

    /// The nodes of `dir`, in creation order.
    pub fn children(&self, dir: &str) -> Vec<Child> {
        self.children_and_watch(dir).0
    }

    /// The nodes of `dir`, in creation order, and a watch that resolves at the
    /// next change of them (a node created or deleted). A directory exists
    /// while it has nodes; for one that does not, the list is empty and the
    /// watch never resolves (ZooKeeper would answer "no node").
    pub fn children_and_watch(&self, dir: &str) -> (Vec<Child>, Watch) {
        let mut state = self.state();
        state.expire_silent(Instant::now());
        let Some(dir) = state.dirs.get(dir) else {
            return (Vec::new(), Box::pin(std::future::pending()));
        };
        let children = dir.nodes.values().map(|n| n.child.clone()).collect();
        let mut changed = dir.changed.subscribe();
        let watch = Box::pin(async move {
            // A send, or the directory going (its sender dropped): a change.
            let _ = changed.changed().await;
        });
        (children, watch)
    }

    /// Deletes the node at `path`; false when there was none.
    pub fn delete(&self, path: &str) -> bool {
        self.state().delete(path)
    }

    /// Resolves when the node at `path` is gone (at once when it is).
    pub fn watch_gone(&self, path: &str) -> Watch {
        let state = self.state();
        let node =
            split(path).and_then(|(dir, sequence)| state.dirs.get(dir)?.nodes.get(&sequence));
        let Some(node) = node else {
            return Box::pin(std::future::ready(()));
        };
        let mut gone = node.gone.subscribe();
        Box::pin(async move {
            // Nobody sends: this resolves when the sender goes with the node.
            while gone.changed().await.is_ok() {}
        })
    }

    /// How many sessions are open.
    pub fn sessions(&self) -> usize {
        let mut state = self.state();
        state.expire_silent(Instant::now());
        state.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn nodes_are_sequential_and_go_with_their_session() {
        let store = Store::new();
        let a = store.open_session(Duration::from_secs(10));
        let b = store.open_session(Duration::from_secs(10));
        let first = store.create_sequential("/locks/x", "write-", a).unwrap();
        let second = store.create_sequential("/locks/x", "read-", b).unwrap();
        assert_eq!(first.name(), "write-0000000000");
        assert_eq!(second.name(), "read-0000000001");
        assert!(second.created > first.created);
        let gone = store.watch_gone(&first.path);
        store.expire_session(a);
        gone.await;
        assert_eq!(store.children("/locks/x"), vec![second]);
        assert_eq!(store.ping(a), Err(StoreError::SessionExpired));
        assert_eq!(
            store.create_sequential("/locks/x", "write-", a),
            Err(StoreError::SessionExpired)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_session_expires() {
        let store = Store::new();
        let a = store.open_session(Duration::from_secs(1));
        store.create_sequential("/locks/y", "write-", a).unwrap();
        tokio::time::sleep(Duration::from_millis(900)).await;
        store.ping(a).unwrap();
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert_eq!(store.children("/locks/y").len(), 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(store.children("/locks/y").is_empty());
        assert_eq!(store.sessions(), 0);
    }
}
