//! Per-instance lock state: the guest's lock session and its handles' bookkeeping.
//!
//! A [`WardlockCtx`] lives in the Store data of one guest instance. It owns the
//! instance's backend session, so dropping the Store (after a return, a trap, a
//! deadline or an embedder's cancel) drops the session, and the backend releases
//! everything the instance held. Nothing here relies on the guest, or wasmtime,
//! calling resource destructors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::error::LockError;
use super::handle::LockHandle;
use crate::backend::{Grant, GrantStatus, LockBackend, LockSession, Mode};
use crate::name::LockName;
use crate::policy::LockPolicy;

/// One backend grant of this instance and how many live handles use it.
struct GrantRecord {
    name: LockName,
    mode: Mode,
    grant: Grant,
    handles: usize,
}

/// The lock state of one guest instance.
pub struct WardlockCtx {
    session: Box<dyn LockSession>,
    policy: Arc<LockPolicy>,
    records: HashMap<u64, GrantRecord>,
    /// The record currently serving each name (re-entrant acquires join it).
    by_name: HashMap<LockName, u64>,
    next_record: u64,
    /// Handles created and not yet dropped, released or not.
    live_handles: usize,
}

impl WardlockCtx {
    /// A context whose session on `backend` is owned by `owner` (a description
    /// shown by status tools, e.g. `counter.wasm#3`).
    pub fn new(backend: &dyn LockBackend, policy: Arc<LockPolicy>, owner: &str) -> Self {
        WardlockCtx {
            session: backend.open_session(owner),
            policy,
            records: HashMap::new(),
            by_name: HashMap::new(),
            next_record: 0,
            live_handles: 0,
        }
    }

    /// Number of handles the instance holds (released or not) and has not dropped.
    pub fn live_handles(&self) -> usize {
        self.live_handles
    }

    /// Waits for `name` in `mode`, for at most `timeout`.
    ///
    /// # Errors
    /// Every [`LockError`] case but `Released`: bad or ungranted name, handle cap,
    /// `WouldDeadlock` for exclusive while holding only shared, backend failures.
    ///
    /// # Cancellation safety
    /// Cancel safe: if the future is dropped, nothing was recorded and the backend
    /// withdraws the wait.
    pub async fn acquire(
        &mut self,
        name: &str,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<LockHandle, LockError> {
        let name = self.admit(name)?;
        if let Some(handle) = self.join_existing(&name, mode)? {
            return Ok(handle);
        }
        let grant = self.session.acquire(&name, mode, timeout).await?;
        Ok(self.record(name, mode, grant))
    }

    /// Takes `name` in `mode` if possible without waiting.
    ///
    /// # Errors
    /// As [`WardlockCtx::acquire`], without `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`WardlockCtx::acquire`].
    pub async fn try_acquire(
        &mut self,
        name: &str,
        mode: Mode,
    ) -> Result<Option<LockHandle>, LockError> {
        let name = self.admit(name)?;
        if let Some(handle) = self.join_existing(&name, mode)? {
            return Ok(Some(handle));
        }
        let grant = self.session.try_acquire(&name, mode).await?;
        Ok(grant.map(|grant| self.record(name, mode, grant)))
    }

    /// Releases `handle`; the backend grant goes with the last handle on it.
    ///
    /// # Errors
    /// `Released` if it was released already; `Lost` if the grant had been lost.
    pub fn release(&mut self, handle: &mut LockHandle) -> Result<(), LockError> {
        if handle.released {
            return Err(LockError::Released);
        }
        handle.released = true;
        let Some(record) = self.records.get_mut(&handle.record) else {
            return Err(LockError::Lost);
        };
        record.handles -= 1;
        let lost = self.session.status(record.grant.id) == GrantStatus::Lost;
        if record.handles == 0 {
            self.end_record(handle.record)?;
        }
        if lost { Err(LockError::Lost) } else { Ok(()) }
    }

    /// Forgets a handle the guest dropped, releasing it first if needed.
    pub fn drop_handle(&mut self, mut handle: LockHandle) {
        self.live_handles = self.live_handles.saturating_sub(1);
        if !handle.released {
            // Lost or not, the grant is gone for this guest either way.
            let _ = self.release(&mut handle);
        }
    }

    /// What `handle` currently guarantees.
    pub fn status(&self, handle: &LockHandle) -> GrantStatus {
        if handle.released {
            return GrantStatus::Released;
        }
        match self.records.get(&handle.record) {
            Some(record) => self.session.status(record.grant.id),
            None => GrantStatus::Lost,
        }
    }

    /// Releases everything this instance holds now, for embedders that keep a Store
    /// alive after the guest's work ends. Existing handles report `released`.
    pub fn release_all(&mut self) {
        let ids: Vec<u64> = self.records.keys().copied().collect();
        for id in ids {
            let _ = self.end_record(id);
        }
    }

    /// Validates `name` against syntax, grants and the handle cap.
    fn admit(&self, name: &str) -> Result<LockName, LockError> {
        let name = LockName::new(name)?;
        if !self.policy.allows(&name) {
            return Err(LockError::Denied(name.to_string()));
        }
        let cap = self.policy.handle_cap();
        if self.live_handles >= cap {
            return Err(LockError::LimitExceeded(format!(
                "this instance already has {cap} lock handles, the most allowed; drop some first"
            )));
        }
        Ok(name)
    }

    /// A new handle on the grant this instance already holds for `name`, if the
    /// request can join it (re-entrancy and downgrade).
    fn join_existing(
        &mut self,
        name: &LockName,
        mode: Mode,
    ) -> Result<Option<LockHandle>, LockError> {
        let Some(&id) = self.by_name.get(name) else {
            return Ok(None);
        };
        let Some(record) = self.records.get_mut(&id) else {
            return Ok(None);
        };
        if self.session.status(record.grant.id) == GrantStatus::Lost {
            // Old handles keep reporting `lost`; the new request starts afresh.
            self.by_name.remove(name);
            return Ok(None);
        }
        if record.mode == Mode::Shared && mode == Mode::Exclusive {
            return Err(LockError::WouldDeadlock(name.to_string()));
        }
        record.handles += 1;
        self.live_handles += 1;
        Ok(Some(LockHandle {
            name: name.clone(),
            mode,
            token: record.grant.token,
            record: id,
            released: false,
        }))
    }

    fn record(&mut self, name: LockName, mode: Mode, grant: Grant) -> LockHandle {
        self.next_record += 1;
        let id = self.next_record;
        self.records.insert(
            id,
            GrantRecord {
                name: name.clone(),
                mode,
                grant,
                handles: 1,
            },
        );
        self.by_name.insert(name.clone(), id);
        self.live_handles += 1;
        tracing::debug!(lock = %name, %mode, token = grant.token, "granted");
        LockHandle {
            name,
            mode,
            token: grant.token,
            record: id,
            released: false,
        }
    }

    fn end_record(&mut self, id: u64) -> Result<(), LockError> {
        let Some(record) = self.records.remove(&id) else {
            return Ok(());
        };
        if self.by_name.get(&record.name) == Some(&id) {
            self.by_name.remove(&record.name);
        }
        tracing::debug!(lock = %record.name, token = record.grant.token, "released");
        self.session.release(record.grant.id)?;
        Ok(())
    }
}
