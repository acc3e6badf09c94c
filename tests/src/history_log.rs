//! The history a fault test records for the one checker of every fault run
//! ([`crate::lock_set::history::check`]): events of one lock, stamped on
//! one monotonic clock in the order they happened, from native workers
//! (`crate::chaos`) and, through [`HistoryTap`], from guests: a tap is an
//! observer of a backend's sessions that records each grant of the lock
//! (`acquire` `ok` with its token) and its end (`release` `invoke`, made
//! when the guest releases or its instance ends, before the session lets
//! the grant go), so a guest's hold as recorded lies within its real hold;
//! and `lost` (`info`) the moment a caller of the session hears a grant of
//! it is lost (a status read, or a status change awaited: a guest's
//! subscription). A native hold the test makes is recorded by the log
//! itself ([`HistoryLog::watch`]): its status is read at every grant the log
//! records after it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wardlock_host::backend::observe::{
    BackendObserver, ObservedBackend, SessionObserver, StatusCall,
};
use wardlock_host::backend::{Request, StatusChange};
use wardlock_host::{BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession};

use crate::lock_set::history::{self, Event, FinalSet, Kind, Report, Variant};

/// One lock's history: every event, in the order it happened.
pub struct HistoryLog {
    started: Instant,
    events: Mutex<Vec<Event>>,
    /// Native holds whose status is read at every grant recorded after
    /// them (see [`HistoryLog::watch`]).
    watched: Mutex<Vec<Watched>>,
}

/// A native hold the log reads the status of.
struct Watched {
    session: Arc<dyn LockSession>,
    grant: GrantId,
    id: String,
    token: u64,
    lost: bool,
}

impl HistoryLog {
    /// An empty history, its clock starting now.
    pub fn new() -> Arc<HistoryLog> {
        Arc::new(HistoryLog {
            started: Instant::now(),
            events: Mutex::new(Vec::new()),
            watched: Mutex::new(Vec::new()),
        })
    }

    fn events_mut(&self) -> MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `op` of `id`, stamped now (under the lock, so stamps and
    /// order agree). Before a grant (`acquire` `ok`), the watched holds
    /// that read `lost` now are recorded `lost`.
    pub fn record(
        &self,
        op: &str,
        kind: Kind,
        id: &str,
        element: Option<&str>,
        token: Option<u64>,
    ) {
        if (op, kind) == ("acquire", Kind::Ok) {
            self.read_watched();
        }
        self.push(op, kind, id, element, token);
    }

    /// A native hold (`id`'s grant `grant` of `session`, with `token`)
    /// granted now: recorded, and from now on its status is read at every
    /// grant the log records (just after the engine answered it), so the
    /// history shows whether it read `lost` by then (a watcher woken by the
    /// change would stamp when its task ran, not when the status changed).
    pub fn watch(&self, session: Arc<dyn LockSession>, grant: Grant, id: &str) {
        self.record("acquire", Kind::Ok, id, None, Some(grant.token));
        self.watched_mut().push(Watched {
            session,
            grant: grant.id,
            id: id.to_owned(),
            token: grant.token,
            lost: false,
        });
    }

    /// Records the release of the watched hold `grant`, then makes it.
    ///
    /// # Errors
    /// The session's answer to the release.
    pub fn release_watched(&self, grant: GrantId) -> Result<(), BackendError> {
        let watched = {
            let mut all = self.watched_mut();
            let at = all.iter().position(|w| w.grant == grant);
            at.map(|at| all.remove(at))
        };
        let Some(watched) = watched else {
            return Err(BackendError::UnknownGrant(grant.0));
        };
        self.push(
            "release",
            Kind::Invoke,
            &watched.id,
            None,
            Some(watched.token),
        );
        watched.session.release(grant)
    }

    fn watched_mut(&self) -> MutexGuard<'_, Vec<Watched>> {
        self.watched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `lost` for each watched hold that reads it now (once).
    fn read_watched(&self) {
        for watched in self.watched_mut().iter_mut().filter(|w| !w.lost) {
            if watched.session.status(watched.grant) == GrantStatus::Lost {
                watched.lost = true;
                self.push("lost", Kind::Info, &watched.id, None, Some(watched.token));
            }
        }
    }

    fn push(&self, op: &str, kind: Kind, id: &str, element: Option<&str>, token: Option<u64>) {
        let mut events = self.events_mut();
        let t_ns = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        events.push(Event {
            op: op.to_owned(),
            kind,
            id: id.to_owned(),
            element: element.map(str::to_owned),
            token,
            revision: None,
            error: None,
            t_ns,
        });
    }

    /// The events so far, taken out of the log.
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events_mut())
    }

    /// The checker's verdict on a history of holds alone (no set was
    /// written): overlaps of holds neither told `lost` (c), and tokens that
    /// did not rise (d). The events stay in the log.
    pub fn check_holds(&self) -> Report {
        let events = self.events_mut().clone();
        history::check(&events, &FinalSet::from_file_text(""), Variant::Plain, 0)
    }
}

/// Wraps `backend` so the grants of `lock` its sessions make are recorded in
/// `log`, each session under the id `<prefix><owner>/<n>`.
pub fn tap(
    backend: Arc<dyn LockBackend>,
    log: &Arc<HistoryLog>,
    prefix: &str,
    lock: &str,
) -> Arc<dyn LockBackend> {
    Arc::new(ObservedBackend::new(
        backend,
        HistoryTap {
            log: log.clone(),
            prefix: prefix.to_owned(),
            lock: lock.to_owned(),
            sessions: AtomicU64::new(0),
        },
    ))
}

/// The observer [`tap`] plugs in.
pub struct HistoryTap {
    log: Arc<HistoryLog>,
    prefix: String,
    lock: String,
    sessions: AtomicU64,
}

impl BackendObserver for HistoryTap {
    type Session = SessionTap;

    fn session(&self, owner: &str) -> SessionTap {
        let n = self.sessions.fetch_add(1, Ordering::SeqCst);
        SessionTap {
            log: self.log.clone(),
            id: format!("{}{owner}/{n}", self.prefix),
            lock: self.lock.clone(),
            open: Mutex::new(HashMap::new()),
        }
    }
}

/// One session's tap: its open grants of the lock, with their tokens.
pub struct SessionTap {
    log: Arc<HistoryLog>,
    id: String,
    lock: String,
    open: Mutex<HashMap<GrantId, u64>>,
}

impl SessionTap {
    fn open(&self) -> MutexGuard<'_, HashMap<GrantId, u64>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that a caller heard `grant` is lost (on every read that says
    /// so: the first ends the hold for the checker, the others change
    /// nothing).
    fn heard_lost(&self, grant: GrantId) {
        if let Some(token) = self.open().get(&grant).copied() {
            self.log
                .record("lost", Kind::Info, &self.id, None, Some(token));
        }
    }
}

impl SessionObserver for SessionTap {
    fn granted(&self, request: Request<'_>, grant: &Grant, _waited: Option<Duration>) {
        if request.name.as_str() == self.lock {
            self.log
                .record("acquire", Kind::Ok, &self.id, None, Some(grant.token));
            self.open().insert(grant.id, grant.token);
        }
    }

    fn released(&self, grant: GrantId) {
        if let Some(token) = self.open().remove(&grant) {
            self.log
                .record("release", Kind::Invoke, &self.id, None, Some(token));
        }
    }

    fn status(&self, grant: GrantId, status: GrantStatus) -> GrantStatus {
        if status == GrantStatus::Lost {
            self.heard_lost(grant);
        }
        status
    }

    fn status_changed(&self, call: StatusCall) -> StatusChange {
        let StatusCall { grant, inner, .. } = call;
        let Some(token) = self.open().get(&grant).copied() else {
            return inner;
        };
        let (log, id) = (self.log.clone(), self.id.clone());
        Box::pin(async move {
            let status = inner.await;
            if status == GrantStatus::Lost {
                log.record("lost", Kind::Info, &id, None, Some(token));
            }
            status
        })
    }

    fn closing(&self) {
        let open: Vec<u64> = self.open().drain().map(|(_, token)| token).collect();
        for token in open {
            self.log
                .record("release", Kind::Invoke, &self.id, None, Some(token));
        }
    }
}
