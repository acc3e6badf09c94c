//! A mutant engine, for showing that the history checker catches what it
//! must: a grant that does not wait for its predecessor.
//!
//! An engine of its own (one table of exclusive locks, shared by every
//! clone), not a wrapper of a real one: wrapping would make it a second type
//! that forwards the session trait, which only the observer wrapper does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use wardlock_host::backend::{Request, StatusChange, settled};
use wardlock_host::{BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession};

/// The mutant: every lock is exclusive; an acquire waits at most
/// [`Impatient::PATIENCE`] for the holder to leave, then grants anyway with
/// token 0 (a made-up grant: a second holder, and a token that does not
/// rise). Clones share one table, so several "hosts" contend on it.
#[derive(Clone, Default)]
pub struct Impatient {
    table: Arc<Table>,
}

impl Impatient {
    /// How long an acquire waits for the holder to leave.
    pub const PATIENCE: Duration = Duration::from_millis(2);
}

#[derive(Default)]
struct Table {
    /// Each lock's real holder (made-up grants are not recorded).
    holders: Mutex<HashMap<String, GrantId>>,
    /// Woken when a holder leaves.
    left: Notify,
    /// Grant ids, and the tokens of real grants.
    next: AtomicU64,
}

impl Table {
    fn holders(&self) -> MutexGuard<'_, HashMap<String, GrantId>> {
        self.holders.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `name` when nobody holds it.
    fn take(&self, name: &str) -> Option<Grant> {
        let mut holders = self.holders();
        if holders.contains_key(name) {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        holders.insert(name.to_owned(), GrantId(id));
        Some(Grant {
            id: GrantId(id),
            token: id,
        })
    }

    fn leave(&self, name: &str, grant: GrantId) {
        let mut holders = self.holders();
        if holders.get(name) == Some(&grant) {
            holders.remove(name);
            self.left.notify_waiters();
        }
    }
}

impl LockBackend for Impatient {
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(ImpatientSession {
            table: self.table.clone(),
            grants: Mutex::new(HashMap::new()),
        })
    }

    fn kind(&self) -> &'static str {
        "impatient"
    }
}

struct ImpatientSession {
    table: Arc<Table>,
    /// The session's grants (real and made up) and the names they hold.
    grants: Mutex<HashMap<GrantId, String>>,
}

impl ImpatientSession {
    fn grants(&self) -> MutexGuard<'_, HashMap<GrantId, String>> {
        self.grants.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, name: &str, grant: Grant) -> Grant {
        self.grants().insert(grant.id, name.to_owned());
        grant
    }
}

#[async_trait]
impl LockSession for ImpatientSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        _timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let name = request.name.as_str();
        let patience = tokio::time::sleep(Impatient::PATIENCE);
        tokio::pin!(patience);
        loop {
            let left = self.table.left.notified();
            if let Some(grant) = self.table.take(name) {
                return Ok(self.record(name, grant));
            }
            tokio::select! {
                () = left => {}
                () = &mut patience => break,
            }
        }
        let id = GrantId(self.table.next.fetch_add(1, Ordering::SeqCst) + 1);
        Ok(self.record(name, Grant { id, token: 0 }))
    }

    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError> {
        let name = request.name.as_str();
        Ok(self.table.take(name).map(|grant| self.record(name, grant)))
    }

    fn release(&self, grant: GrantId) -> Result<(), BackendError> {
        let name = self
            .grants()
            .remove(&grant)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        self.table.leave(&name, grant);
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
        for (grant, name) in self.grants().drain() {
            self.table.leave(&name, grant);
        }
    }
}
