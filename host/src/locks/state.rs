//! The table's data under its one mutex: sessions, their waits and grants,
//! per lock its holders and waiters, the recent cycles. Plain data with
//! quick methods (no I/O, no await) so the mutex is held for microseconds.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::graph::{self, Step};
use super::snapshot::{Cycle, LockEntry, LocksSnapshot, Party};
use crate::backend::{GrantId, RequestKind};

/// How many cycles the snapshot keeps (the newest).
pub const RECENT_CYCLES: usize = 16;

/// A session opened through the table.
pub(super) type SessionId = u64;
/// A wait; ids grow in arrival order, so the largest is the youngest.
pub(super) type WaitId = u64;
/// An engine (a backend the table was given), by its place in `engines`.
pub(super) type EngineId = usize;

/// A lock: its name first, so a prefix is a range of the map.
pub(super) type LockKey = (String, EngineId);

pub(super) struct SessionRec {
    pub(super) owner: Arc<str>,
    pub(super) waits: Vec<WaitId>,
    pub(super) holds: Vec<(LockKey, GrantId)>,
}

pub(super) struct WaitRec {
    pub(super) session: SessionId,
    pub(super) key: LockKey,
    pub(super) kind: RequestKind,
    pub(super) since: Instant,
    /// Notified to end the wait with `would-deadlock`.
    pub(super) breaker: Arc<Notify>,
}

pub(super) struct HoldRec {
    pub(super) session: SessionId,
    pub(super) grant: GrantId,
    pub(super) kind: RequestKind,
    pub(super) since: Instant,
    pub(super) token: u64,
}

#[derive(Default)]
pub(super) struct LockRec {
    pub(super) holders: Vec<HoldRec>,
    pub(super) waiters: Vec<WaitId>,
}

pub(super) struct CycleRec {
    pub(super) scope: &'static str,
    pub(super) parties: Vec<String>,
    pub(super) locks: Vec<String>,
    pub(super) found: Instant,
    pub(super) broken: Option<String>,
}

/// A cycle found among this host's sessions and the wait chosen to break it.
pub(super) struct Broken {
    pub(super) victim: WaitId,
    pub(super) breaker: Arc<Notify>,
    pub(super) name: String,
}

pub(super) struct State {
    pub(super) version: u64,
    pub(super) engines: Vec<&'static str>,
    pub(super) sessions: HashMap<SessionId, SessionRec>,
    pub(super) waits: HashMap<WaitId, WaitRec>,
    pub(super) locks: BTreeMap<LockKey, LockRec>,
    pub(super) cycles: VecDeque<CycleRec>,
    pub(super) cycles_found: u64,
    /// Whether the cross-host scan runs ([`super::remote`]).
    pub(super) scanning: bool,
    next_session: SessionId,
    next_wait: WaitId,
}

impl State {
    pub(super) fn new() -> Self {
        State {
            version: 0,
            engines: Vec::new(),
            sessions: HashMap::new(),
            waits: HashMap::new(),
            locks: BTreeMap::new(),
            cycles: VecDeque::new(),
            cycles_found: 0,
            scanning: false,
            next_session: 0,
            next_wait: 0,
        }
    }

    pub(super) fn open(&mut self, owner: &str) -> SessionId {
        self.next_session += 1;
        let id = self.next_session;
        self.sessions.insert(
            id,
            SessionRec {
                owner: owner.into(),
                waits: Vec::new(),
                holds: Vec::new(),
            },
        );
        id
    }

    /// Forgets a session with its waits and grants (it was dropped).
    pub(super) fn close(&mut self, session: SessionId) {
        let Some(rec) = self.sessions.remove(&session) else {
            return;
        };
        for wait in rec.waits {
            self.drop_wait_rec(wait);
        }
        for (key, grant) in rec.holds {
            self.drop_hold_rec(&key, session, grant);
        }
        self.version += 1;
    }

    pub(super) fn add_wait(
        &mut self,
        session: SessionId,
        key: LockKey,
        kind: RequestKind,
        breaker: Arc<Notify>,
    ) -> WaitId {
        self.next_wait += 1;
        let id = self.next_wait;
        self.locks.entry(key.clone()).or_default().waiters.push(id);
        if let Some(rec) = self.sessions.get_mut(&session) {
            rec.waits.push(id);
        }
        self.waits.insert(
            id,
            WaitRec {
                session,
                key,
                kind,
                since: Instant::now(),
                breaker,
            },
        );
        self.version += 1;
        id
    }

    /// Ends a wait however it ended; false if it was gone already.
    pub(super) fn remove_wait(&mut self, wait: WaitId) -> bool {
        let Some(rec) = self.drop_wait_rec(wait) else {
            return false;
        };
        if let Some(session) = self.sessions.get_mut(&rec.session) {
            session.waits.retain(|w| *w != wait);
        }
        self.version += 1;
        true
    }

    fn drop_wait_rec(&mut self, wait: WaitId) -> Option<WaitRec> {
        let rec = self.waits.remove(&wait)?;
        if let Some(lock) = self.locks.get_mut(&rec.key) {
            lock.waiters.retain(|w| *w != wait);
            if lock.holders.is_empty() && lock.waiters.is_empty() {
                self.locks.remove(&rec.key);
            }
        }
        Some(rec)
    }

    pub(super) fn add_hold(
        &mut self,
        session: SessionId,
        key: LockKey,
        kind: RequestKind,
        grant: GrantId,
        token: u64,
    ) {
        let Some(rec) = self.sessions.get_mut(&session) else {
            return;
        };
        rec.holds.push((key.clone(), grant));
        self.locks.entry(key).or_default().holders.push(HoldRec {
            session,
            grant,
            kind,
            since: Instant::now(),
            token,
        });
        self.version += 1;
    }

    /// True once when a wait arrives and the cross-host scan is not
    /// running: the caller starts it.
    pub(super) fn start_scan(&mut self) -> bool {
        !std::mem::replace(&mut self.scanning, true)
    }

    /// The lock `grant` of `session` is on.
    pub(super) fn hold_key(&self, session: SessionId, grant: GrantId) -> Option<LockKey> {
        let rec = self.sessions.get(&session)?;
        rec.holds
            .iter()
            .find(|(_, g)| *g == grant)
            .map(|(key, _)| key.clone())
    }

    pub(super) fn remove_hold(&mut self, session: SessionId, grant: GrantId) {
        let Some(rec) = self.sessions.get_mut(&session) else {
            return;
        };
        let Some(at) = rec.holds.iter().position(|(_, g)| *g == grant) else {
            return;
        };
        let (key, _) = rec.holds.swap_remove(at);
        self.drop_hold_rec(&key, session, grant);
        self.version += 1;
    }

    fn drop_hold_rec(&mut self, key: &LockKey, session: SessionId, grant: GrantId) {
        if let Some(lock) = self.locks.get_mut(key) {
            lock.holders
                .retain(|h| h.session != session || h.grant != grant);
            if lock.holders.is_empty() && lock.waiters.is_empty() {
                self.locks.remove(key);
            }
        }
    }

    /// `session`'s wait-for edges: for each of its lock waits (a semaphore's
    /// permit wait is no edge: any one of its holders releasing frees it,
    /// which a wait-for cycle cannot express), each other session of this
    /// host holding that lock in a conflicting mode ([`graph::conflicts`]).
    /// Queue order is no edge: a cycle closed only by a waiter queued ahead
    /// in a FIFO queue is not found.
    fn edges(&self, session: SessionId) -> Vec<(WaitId, SessionId)> {
        let mut out = Vec::new();
        let Some(rec) = self.sessions.get(&session) else {
            return out;
        };
        for wait in &rec.waits {
            let Some(w) = self.waits.get(wait) else {
                continue;
            };
            let RequestKind::Lock(mode) = w.kind else {
                continue;
            };
            let Some(lock) = self.locks.get(&w.key) else {
                continue;
            };
            for h in &lock.holders {
                let RequestKind::Lock(held) = h.kind else {
                    continue;
                };
                if h.session != session && graph::conflicts(mode, held) {
                    out.push((*wait, h.session));
                }
            }
        }
        out
    }

    /// Looks for a wait-for cycle through `session` (whose wait was just
    /// queued, or who was just granted a lock others wait for); if there is
    /// one, records it, forgets its youngest wait and returns it to be ended.
    pub(super) fn break_cycle_through(&mut self, session: SessionId) -> Option<Broken> {
        let cycle = graph::cycle_through(session, |s| self.edges(*s))?;
        let victim = cycle.iter().map(|step| step.wait).max()?;
        let (parties, locks) = self.describe(&cycle);
        let rec = self.waits.get(&victim)?;
        let name = rec.key.0.clone();
        let breaker = rec.breaker.clone();
        let broken = self.sessions.get(&rec.session).map(|s| s.owner.to_string());
        tracing::warn!(
            parties = ?parties,
            locks = ?locks,
            broken = broken.as_deref().unwrap_or(""),
            "wait-for cycle among this host's guests: the youngest wait gets would-deadlock"
        );
        self.record_cycle("host", parties, locks, broken);
        self.remove_wait(victim);
        Some(Broken {
            victim,
            breaker,
            name,
        })
    }

    fn describe(&self, cycle: &[Step<SessionId, WaitId>]) -> (Vec<String>, Vec<String>) {
        cycle
            .iter()
            .map(|step| {
                let owner = self
                    .sessions
                    .get(&step.party)
                    .map(|s| s.owner.to_string())
                    .unwrap_or_default();
                let lock = self
                    .waits
                    .get(&step.wait)
                    .map(|w| w.key.0.clone())
                    .unwrap_or_default();
                (owner, lock)
            })
            .unzip()
    }

    pub(super) fn record_cycle(
        &mut self,
        scope: &'static str,
        parties: Vec<String>,
        locks: Vec<String>,
        broken: Option<String>,
    ) {
        if self.cycles.len() == RECENT_CYCLES {
            self.cycles.pop_back();
        }
        self.cycles.push_front(CycleRec {
            scope,
            parties,
            locks,
            found: Instant::now(),
            broken,
        });
        self.cycles_found += 1;
        self.version += 1;
    }

    pub(super) fn snapshot(&self, host: &str, prefix: Option<&str>) -> LocksSnapshot {
        let now = Instant::now();
        let ms = |since: Instant| {
            u64::try_from(now.saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX)
        };
        let owner = |session: SessionId| {
            self.sessions
                .get(&session)
                .map(|s| s.owner.to_string())
                .unwrap_or_default()
        };
        let prefix = prefix.unwrap_or("");
        let locks = self
            .locks
            .range((prefix.to_owned(), 0)..)
            .take_while(|((name, _), _)| name.starts_with(prefix))
            .map(|((name, engine), lock)| LockEntry {
                name: name.clone(),
                engine: self.engines.get(*engine).copied().unwrap_or(""),
                holders: lock
                    .holders
                    .iter()
                    .enumerate()
                    .map(|(i, h)| Party {
                        owner: owner(h.session),
                        mode: h.kind.as_str(),
                        for_ms: ms(h.since),
                        token: Some(h.token),
                        position: i + 1,
                    })
                    .collect(),
                waiters: lock
                    .waiters
                    .iter()
                    .filter_map(|w| self.waits.get(w))
                    .enumerate()
                    .map(|(i, w)| Party {
                        owner: owner(w.session),
                        mode: w.kind.as_str(),
                        for_ms: ms(w.since),
                        token: None,
                        position: i + 1,
                    })
                    .collect(),
            })
            .collect();
        let cycles = self
            .cycles
            .iter()
            .map(|c| Cycle {
                scope: c.scope,
                parties: c.parties.clone(),
                locks: c.locks.clone(),
                found_ms_ago: ms(c.found),
                broken: c.broken.clone(),
            })
            .collect();
        LocksSnapshot {
            host: host.to_owned(),
            version: self.version,
            locks,
            cycles,
            cycles_found: self.cycles_found,
        }
    }
}
