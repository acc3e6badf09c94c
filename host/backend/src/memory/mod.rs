//! The in-memory backend: the embedded default.
//!
//! Locks live in this process only, so it coordinates the guests of one host (and
//! native Rust code sharing the backend). It is a product feature, not a mock: the
//! same fair FIFO semantics as every other engine (ZooKeeper's and etcd's recipes,
//! and engines added outside wardlock), fencing tokens, timeouts, and
//! an observation API ([`MemoryBackend::snapshot`], [`MemoryBackend::changes`]) for
//! status tools and for tests that must wait for "guest X is queued" as an event,
//! and fault injection ([`MemoryBackend::inject`], [`Fault`]) for tests of how a
//! plugin reacts to `suspended` and `lost`.

mod election;
mod faults;
mod guarded;
mod inspect;
mod keyvalue;
#[cfg(test)]
mod model_tests;
mod queue;
mod registration;
mod revoke;
#[cfg(test)]
mod semaphore_tests;
mod session;
mod watchers;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, watch};

pub use self::faults::Fault;
use self::queue::{Entry, Queue};
pub use self::registration::{MemoryConfig, MemoryEngine, NAME};
use self::session::MemorySession;
use super::{BackendError, LockBackend, LockSession, Mode};
use crate::name::LockName;

/// The in-memory lock service. Cheap to clone; clones share the same locks.
#[derive(Clone, Default)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
}

/// One request as seen by [`MemoryBackend::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    /// The session's owner description.
    pub owner: String,
    /// The mode requested or held (`Shared` for a semaphore's permits).
    pub mode: Mode,
    /// `Some(token)` for holders, `None` for waiters.
    pub token: Option<u64>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Bumped on every change to any queue.
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    queues: HashMap<LockName, Queue>,
    /// Waiters to wake when their request is granted.
    wakers: HashMap<u64, oneshot::Sender<()>>,
    owners: HashMap<u64, String>,
    next_token: u64,
    next_id: u64,
    /// Sessions whose grants report `suspended` (injected, see `faults`).
    suspended: HashSet<u64>,
    /// Grants taken away by an injected expiry: they report `lost`.
    lost: HashSet<u64>,
    /// How late every acquire reaches the service (injected).
    grant_delay: std::time::Duration,
    /// Status channels of the grants someone subscribed to, by request id.
    watchers: HashMap<u64, watchers::Watcher>,
    /// Revocation flags of held requests, by request id (see `revoke`).
    revocations: HashMap<u64, watch::Sender<bool>>,
    /// The guarded store's entries (see `guarded`).
    guarded: guarded::GuardedStore,
    /// The key-value store's entries (see `keyvalue`).
    keyvalue: keyvalue::KeyValueStore,
    /// The values of election candidates, by request id (see `election`).
    candidates: HashMap<u64, String>,
}

impl MemoryBackend {
    /// A backend with no locks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The queue of `name`, holders and waiters in arrival order (empty when
    /// nobody holds or waits).
    pub fn snapshot(&self, name: &LockName) -> Vec<QueueEntry> {
        let state = self.shared.lock();
        let Some(queue) = state.queues.get(name) else {
            return Vec::new();
        };
        queue
            .entries()
            .map(|e| QueueEntry {
                owner: state.owners.get(&e.session).cloned().unwrap_or_default(),
                mode: e.mode,
                token: e.token,
            })
            .collect()
    }

    /// Number of names that currently have holders or waiters.
    pub fn active_names(&self) -> usize {
        self.shared.lock().queues.len()
    }

    /// A receiver that changes whenever any queue changes: await
    /// [`watch::Receiver::changed`] and look again with [`MemoryBackend::snapshot`].
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    /// Waits until `predicate` holds for the queue of `name`.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub async fn wait_for(
        &self,
        name: &LockName,
        mut predicate: impl FnMut(&[QueueEntry]) -> bool,
    ) {
        let mut changes = self.changes();
        loop {
            changes.mark_unchanged();
            if predicate(&self.snapshot(name)) {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

impl LockBackend for MemoryBackend {
    fn open_session(&self, owner: &str) -> Box<dyn LockSession> {
        let id = {
            let mut state = self.shared.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.owners.insert(id, owner.to_owned());
            id
        };
        Box::new(MemorySession::new(self.shared.clone(), id))
    }

    fn kind(&self) -> &'static str {
        NAME
    }
}

impl Shared {
    /// Locks the state. A poisoned mutex means a panic elsewhere in this module
    /// while the state was consistent at every await-free step, so keep going.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn notify_changed(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }
}

impl State {
    /// Appends a request for `name` (a lock in `mode`, or with `permits` a
    /// permit of a semaphore of that many) and grants what can be granted.
    /// Returns the request id and, if it was granted at once, its token.
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] when `name` is queued as the other
    /// kind (lock or semaphore) or as a semaphore of another permit count.
    fn enqueue(
        &mut self,
        name: &LockName,
        session: u64,
        mode: Mode,
        permits: Option<u32>,
    ) -> Result<(u64, Option<u64>), BackendError> {
        let queue = self
            .queues
            .entry(name.clone())
            .or_insert_with(|| permits.map(Queue::semaphore).unwrap_or_default());
        if queue.permits() != permits {
            let now = match queue.permits() {
                Some(n) => format!("a semaphore of {n} permits"),
                None => "a lock".to_owned(),
            };
            let asked = match permits {
                Some(n) => format!("a semaphore of {n} permits"),
                None => format!("a {mode} lock"),
            };
            return Err(BackendError::InvalidRequest(format!(
                "\"{name}\" is in use as {now}; asked for {asked}"
            )));
        }
        self.next_id += 1;
        let id = self.next_id;
        queue.push(Entry {
            id,
            session,
            mode,
            token: None,
        });
        self.regrant(name);
        let token = self
            .queues
            .get(name)
            .and_then(|q| q.get(id))
            .and_then(|e| e.token);
        Ok((id, token))
    }

    /// Removes request `id` from `name` (held or waiting), grants whoever is next
    /// and drops the queue when it is empty. Returns the removed request.
    fn remove(&mut self, name: &LockName, id: u64) -> Option<Entry> {
        self.wakers.remove(&id);
        self.revocations.remove(&id);
        self.candidates.remove(&id);
        let queue = self.queues.get_mut(name)?;
        let removed = queue.remove(id);
        if queue.is_empty() {
            self.queues.remove(name);
        } else {
            self.regrant(name);
        }
        removed
    }

    fn regrant(&mut self, name: &LockName) {
        let Some(queue) = self.queues.get_mut(name) else {
            return;
        };
        for id in queue.grant_ready(&mut self.next_token) {
            if let Some(waker) = self.wakers.remove(&id) {
                // The waiter may have gone; its drop guard then releases the grant.
                let _ = waker.send(());
            }
        }
    }

    /// Grants a shared request beside the exclusive grant `exclusive` of `name`,
    /// with the next token. Returns its id and token; `None` when `exclusive` is
    /// not queued.
    fn downgrade(&mut self, name: &LockName, exclusive: u64, session: u64) -> Option<(u64, u64)> {
        self.next_id += 1;
        let id = self.next_id;
        self.next_token += 1;
        let token = self.next_token;
        let entry = Entry {
            id,
            session,
            mode: Mode::Shared,
            token: Some(token),
        };
        self.queues
            .get_mut(name)?
            .insert_after(exclusive, entry)
            .then_some((id, token))
    }

    /// Takes every grant of `session` away (an injected expiry): they report
    /// `lost`, and whoever is next is granted.
    fn expire(&mut self, session: u64) {
        let held: Vec<(LockName, u64)> = self
            .queues
            .iter()
            .flat_map(|(name, queue)| {
                queue
                    .entries()
                    .filter(|e| e.session == session && e.token.is_some())
                    .map(|e| (name.clone(), e.id))
            })
            .collect();
        for (name, id) in held {
            self.remove(&name, id);
            self.lost.insert(id);
        }
        self.suspended.remove(&session);
        self.publish_session(session);
    }

    fn token_of(&self, name: &LockName, id: u64) -> Option<u64> {
        self.queues.get(name)?.get(id)?.token
    }
}
