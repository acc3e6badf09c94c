//! The host's lock table: every lock its guests hold or wait for, on any
//! engine, and the wait-for cycles (deadlocks) among them.
//!
//! [`LockTable::wrap`] puts a forwarding layer over a backend: each session
//! opened through it is recorded with its owner label (plugin and request or
//! instance), its waits (name, mode, since when) and its grants (name, mode,
//! since when, token), and forgotten on release, on a failed or withdrawn
//! wait (a dropped acquire future), and when the session is dropped. One
//! mutex-protected map, touched twice per acquisition: the page
//! (`/locks`, `/api/locks`) reads [`LockTable::snapshot`] and waits on
//! [`LockTable::changes`].
//!
//! **Deadlocks on one host.** When a wait is queued, it is added to the
//! wait-for graph (the waiting session → each session of this host holding
//! that name in a conflicting mode: an exclusive wait conflicts with every
//! holder, a shared wait only with an exclusive one; semaphore permits and
//! queue order make no edges) and a cycle through it is looked for; a grant
//! is checked the same way (it can give waiters a new holder to wait for).
//! The youngest wait in a cycle (the one queued last) gets
//! [`BackendError::WouldDeadlock`](crate::backend::BackendError::WouldDeadlock)
//! at once, which guests see as `would-deadlock`: if that is the new wait,
//! it is never queued on the engine; if it is an older wait, its engine wait
//! is dropped (withdrawn, as every wait is cancel safe). The cycle is logged
//! (`tracing::warn`), counted and kept in the snapshot.
//!
//! **Deadlocks across hosts** (best effort): see [`remote`].

mod backend;
mod graph;
pub mod remote;
mod session;
mod snapshot;
mod state;

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::watch;

pub use snapshot::{Cycle, LockEntry, LocksSnapshot, Party};
pub use state::RECENT_CYCLES;

use crate::backend::observe::{Observed, ObservedBackend};
use crate::backend::{LockBackend, LockSession};
use backend::TableSessions;
use session::TableObserver;
use state::{EngineId, State};

/// The host-wide table of locks held and waited for, and the deadlock
/// detector over it. Cheap to clone (an `Arc` inside): the runners, the
/// command line and the admin page share one per host.
#[derive(Clone)]
pub struct LockTable {
    shared: Arc<Shared>,
}

struct Shared {
    host: String,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
    engines: Mutex<Engines>,
}

/// The backends the table was given, by [`EngineId`] (kept alive, so an
/// address is never reused for another), and the wrappers it made.
#[derive(Default)]
struct Engines {
    backends: Vec<Arc<dyn LockBackend>>,
    wrapped: Vec<Weak<dyn LockBackend>>,
}

impl LockTable {
    /// An empty table; `host` labels this host on the page.
    pub fn new(host: impl Into<String>) -> Self {
        let (changes, _) = watch::channel(0);
        LockTable {
            shared: Arc::new(Shared {
                host: host.into(),
                state: Mutex::new(State::new()),
                changes,
                engines: Mutex::new(Engines::default()),
            }),
        }
    }

    /// A table labelled with this machine's host name (`HOSTNAME`, else
    /// `/etc/hostname`, else `localhost`).
    pub fn for_this_host() -> Self {
        LockTable::new(host_name())
    }

    /// `backend` with every session it opens tracked and deadlock-checked
    /// here. Wrapping the same backend (the same `Arc`) twice tracks both in
    /// one engine, so a cycle across them is found; wrapping a backend this
    /// table returned gives it back unchanged (never tracked twice).
    pub fn wrap(&self, backend: Arc<dyn LockBackend>) -> Arc<dyn LockBackend> {
        if self.made(&backend) {
            return backend;
        }
        let engine = self.engine(&backend);
        let sessions = TableSessions {
            table: self.clone(),
            engine,
        };
        let wrapped: Arc<dyn LockBackend> = Arc::new(ObservedBackend::new(backend, sessions));
        lock(&self.shared.engines)
            .wrapped
            .push(Arc::downgrade(&wrapped));
        wrapped
    }

    /// `session`, opened on `backend` for `owner`, tracked here: what
    /// [`LockTable::wrap`] does for each session, for a caller that opens
    /// sessions itself (the runner). A session of a backend this table
    /// wrapped is returned unchanged (it is tracked already).
    pub fn track(
        &self,
        backend: &Arc<dyn LockBackend>,
        owner: &str,
        session: Box<dyn LockSession>,
    ) -> Box<dyn LockSession> {
        if self.made(backend) {
            return session;
        }
        let engine = self.engine(backend);
        Box::new(Observed::new(
            session,
            TableObserver::new(self.clone(), engine, owner),
        ))
    }

    /// The locks whose names start with `prefix` (all: `None`), their
    /// holders and waiters, and the recent cycles. One pass over a sorted
    /// map under the mutex: 10,000 locks take a few milliseconds.
    pub fn snapshot(&self, prefix: Option<&str>) -> LocksSnapshot {
        self.shared
            .with(|state| state.snapshot(&self.shared.host, prefix))
    }

    /// The table's version, bumped on every grant, release, wait,
    /// withdrawal and cycle: wait on it to redraw a page.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// How many wait-for cycles were found (for a metric).
    pub fn cycles_found(&self) -> u64 {
        self.shared.with(|state| state.cycles_found)
    }

    /// The host label given to [`LockTable::new`].
    pub fn host(&self) -> &str {
        &self.shared.host
    }

    /// Whether `backend` is a wrapper this table made.
    fn made(&self, backend: &Arc<dyn LockBackend>) -> bool {
        let engines = lock(&self.shared.engines);
        let weak = Arc::downgrade(backend);
        engines.wrapped.iter().any(|w| Weak::ptr_eq(w, &weak))
    }

    /// `backend`'s engine id, registered on first sight.
    fn engine(&self, backend: &Arc<dyn LockBackend>) -> EngineId {
        let mut engines = lock(&self.shared.engines);
        if let Some(id) = engines
            .backends
            .iter()
            .position(|b| Arc::ptr_eq(b, backend))
        {
            return id;
        }
        engines.backends.push(backend.clone());
        let id = engines.backends.len() - 1;
        let kind = backend.kind();
        self.shared.with(|state| {
            while state.engines.len() <= id {
                state.engines.push(kind);
            }
        });
        id
    }
}

impl Shared {
    /// Runs `f` on the state under the mutex and publishes the new version
    /// if `f` changed anything.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = lock(&self.state);
        let before = state.version;
        let out = f(&mut state);
        if state.version != before {
            self.changes.send_replace(state.version);
        }
        out
    }
}

impl std::fmt::Debug for LockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockTable")
            .field("host", &self.shared.host)
            .finish_non_exhaustive()
    }
}

/// The mutex's data, even after a panic elsewhere poisoned it (every
/// mutation leaves the maps consistent between calls).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This machine's name, for the page's host label.
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests;
