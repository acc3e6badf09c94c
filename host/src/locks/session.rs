//! What the lock table hears of one session: an observer
//! ([`SessionObserver`]) plugged into the one forwarding wrapper
//! ([`Observed`](crate::backend::observe::Observed)). Waits and grants are
//! recorded on the way; a wait that would close a wait-for cycle is refused
//! before it reaches the engine, and a wait chosen to break a cycle is ended.

use std::sync::Arc;

use tokio::sync::Notify;

use super::LockTable;
use super::state::{Broken, EngineId, SessionId, WaitId};
use crate::backend::observe::{Admission, SessionObserver};
use crate::backend::{BackendError, Grant, GrantId, Mode, Request, RequestKind, Result};

pub(super) struct TableObserver {
    table: LockTable,
    engine: EngineId,
    session: SessionId,
}

impl TableObserver {
    pub(super) fn new(table: LockTable, engine: EngineId, owner: &str) -> Self {
        let session = table.shared.with(|state| state.open(owner));
        TableObserver {
            table,
            engine,
            session,
        }
    }

    /// Records a grant and ends the wait a cycle it closes picks, if any.
    fn record(&self, name: String, kind: RequestKind, grant: &Grant) {
        let broken = self.table.shared.with(|state| {
            state.add_hold(
                self.session,
                (name, self.engine),
                kind,
                grant.id,
                grant.token,
            );
            state.break_cycle_through(self.session)
        });
        end(broken);
    }
}

/// Ends the wait chosen to break a cycle (its acquire returns
/// `would-deadlock`).
fn end(broken: Option<Broken>) {
    if let Some(broken) = broken {
        broken.breaker.notify_one();
    }
}

/// Forgets a wait however its acquire ends: granted, failed, or dropped.
struct WaitGuard {
    table: LockTable,
    wait: WaitId,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.table.shared.with(|state| state.remove_wait(self.wait));
    }
}

impl Drop for TableObserver {
    fn drop(&mut self) {
        self.table.shared.with(|state| state.close(self.session));
    }
}

impl SessionObserver for TableObserver {
    /// A wait is recorded (a try never waits, so it is not); one that closes
    /// a cycle is refused, or another wait of the cycle is ended.
    fn admit(&self, request: Request<'_>, waits: bool) -> Result<Admission> {
        if !waits {
            return Ok(Admission::default());
        }
        let breaker = Arc::new(Notify::new());
        let key = (request.name.to_string(), self.engine);
        let (wait, broken, scan) = self.table.shared.with(|state| {
            let wait = state.add_wait(self.session, key, request.kind, breaker.clone());
            (
                wait,
                state.break_cycle_through(self.session),
                state.start_scan(),
            )
        });
        if scan {
            super::remote::spawn(&self.table);
        }
        let guard = WaitGuard {
            table: self.table.clone(),
            wait,
        };
        if let Some(broken) = broken {
            if broken.victim == wait {
                // Refused before it reaches the engine: nothing was queued.
                return Err(BackendError::WouldDeadlock(broken.name));
            }
            end(Some(broken));
        }
        let name = request.name.to_string();
        Ok(Admission {
            guard: Some(Box::new(guard)),
            abort: Some(Box::pin(async move {
                breaker.notified().await;
                BackendError::WouldDeadlock(name)
            })),
        })
    }

    fn granted(&self, request: Request<'_>, grant: &Grant, _waited: Option<std::time::Duration>) {
        self.record(request.name.to_string(), request.kind, grant);
    }

    fn released(&self, grant: GrantId) {
        self.table
            .shared
            .with(|state| state.remove_hold(self.session, grant));
    }

    fn downgraded(&self, exclusive: GrantId, shared: &Grant) {
        let key = self
            .table
            .shared
            .with(|state| state.hold_key(self.session, exclusive));
        if let Some((name, _)) = key {
            self.record(name, RequestKind::Lock(Mode::Shared), shared);
        }
    }
}
