//! A session of the ticket engine, and the guard that makes waiting cancel safe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use wardlock_host::backend::{Request, RequestKind, Result, settled};
use wardlock_host::{
    BackendError, Grant, GrantId, GrantStatus, LockName, LockSession, Mode, StatusChange,
};

use super::{Engine, Entry};

/// The grants of one session; everything it holds is released when it drops.
pub(super) struct TicketSession {
    engine: Arc<Engine>,
    /// Held grants by id. Waits are not listed: a wait borrows the session, so
    /// it always ends (and its guard withdraws it) before the session drops.
    held: Mutex<HashMap<u64, Held>>,
}

/// A grant this session holds.
struct Held {
    name: LockName,
    /// Says `Held` until the grant ends, then `Released`: what
    /// [`LockSession::status_changed`] futures wait on, without keeping the
    /// session alive.
    status: watch::Sender<GrantStatus>,
}

impl TicketSession {
    pub(super) fn new(engine: Arc<Engine>) -> Self {
        TicketSession {
            engine,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// The held grants. Each change is a single map operation, so a poisoned
    /// lock still guards a consistent map.
    fn held(&self) -> MutexGuard<'_, HashMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, name: &LockName, id: u64, token: u64) -> Grant {
        let held = Held {
            name: name.clone(),
            status: watch::Sender::new(GrantStatus::Held),
        };
        self.held().insert(id, held);
        Grant {
            id: GrantId(id),
            token,
        }
    }
}

/// Withdraws a queued ticket when dropped, unless disarmed. Dropped with the
/// acquire future, it removes the ticket whether it is still waiting or was
/// granted in the instant before its waiter went away: cancelling leaves
/// nothing queued and nothing held.
struct WaitGuard<'a> {
    engine: &'a Engine,
    name: &'a LockName,
    id: u64,
    armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.engine.withdraw(self.name, self.id);
        }
    }
}

/// The mode of a lock request; the engine has no semaphores.
fn lock_mode(request: Request<'_>) -> Result<Mode> {
    match request.kind {
        RequestKind::Lock(mode) => Ok(mode),
        RequestKind::Permit(_) => Err(BackendError::Unsupported(
            "the ticket engine has no semaphores".into(),
        )),
    }
}

#[async_trait]
impl LockSession for TicketSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        let mode = lock_mode(request)?;
        let name = request.name;
        // A zero timeout tries once: it never joins the queue.
        let may_wait = timeout != Some(Duration::ZERO);
        let (id, woken) = match self.engine.enter(name, mode, may_wait)? {
            Entry::Granted { id, token } => return Ok(self.record(name, id, token)),
            Entry::WouldWait => return Err(BackendError::Timeout),
            Entry::Waiting { id, woken } => (id, woken),
        };
        // No await between queueing and arming: the ticket is never unguarded.
        let mut guard = WaitGuard {
            engine: &self.engine,
            name,
            id,
            armed: true,
        };
        let token = match timeout {
            None => woken.await,
            Some(limit) => tokio::time::timeout(limit, woken)
                .await
                .map_err(|_elapsed| BackendError::Timeout)?,
        };
        // The sender goes unsent only when the ticket was removed, which
        // nothing but this guard does while the wait lasts.
        let token = token.map_err(|_| BackendError::Lost)?;
        guard.armed = false;
        Ok(self.record(name, id, token))
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        let mode = lock_mode(request)?;
        Ok(match self.engine.enter(request.name, mode, false)? {
            Entry::Granted { id, token } => Some(self.record(request.name, id, token)),
            Entry::WouldWait | Entry::Waiting { .. } => None,
        })
    }

    fn release(&self, grant: GrantId) -> Result<()> {
        let held = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        self.engine.withdraw(&held.name, grant.0);
        held.status.send_replace(GrantStatus::Released);
        Ok(())
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        if self.held().contains_key(&grant.0) {
            GrantStatus::Held
        } else {
            GrantStatus::Released
        }
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        // Subscribing under the `held` lock: a release either removed the
        // grant before (settled) or will send `Released` to this receiver.
        let receiver = self.held().get(&grant.0).map(|h| h.status.subscribe());
        let Some(mut status) = receiver else {
            return settled(GrantStatus::Released, seen);
        };
        if seen != GrantStatus::Held {
            // Held now, which differs already.
            return settled(GrantStatus::Held, seen);
        }
        Box::pin(async move {
            // The only change left is the end of the grant; a sender dropped
            // without a word (it never is) means that too.
            let _ = status.wait_for(|now| *now != GrantStatus::Held).await;
            GrantStatus::Released
        })
    }
}

impl Drop for TicketSession {
    /// Releases every grant, synchronously, and tells their watchers.
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.held());
        {
            let mut state = self.engine.state();
            for (id, grant) in &held {
                state.withdraw(&grant.name, *id);
            }
        }
        for grant in held.values() {
            grant.status.send_replace(GrantStatus::Released);
        }
    }
}
