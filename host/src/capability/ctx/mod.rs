//! Per-instance lock state: the guest's lock session and its handles' bookkeeping.
//!
//! A [`WardlockCtx`] lives in the Store data of one guest instance. It owns the
//! instance's backend session, so dropping the Store (after a return, a trap, a
//! deadline or an embedder's cancel) drops the session, and the backend releases
//! everything the instance held. Nothing here relies on the guest, or wasmtime,
//! calling resource destructors.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::error::LockError;
use super::fence::FenceTokens;
use super::handle::{LockHandle, Watch};
use super::wait_bounds::{WaitBounds, WaitInterrupt};
use crate::backend::{
    BackendError, Grant, GrantId, GrantStatus, LockBackend, LockSession, Mode, Request,
};
use crate::name::LockName;
use crate::policy::LockPolicy;
use lock_records::LockRecords;

/// How a request relates to what the instance already holds.
enum Join {
    /// A new handle on an existing grant.
    Handle(LockHandle),
    /// Shared while holding exclusive: downgrade that grant.
    Downgrade(u64),
    /// Nothing held: ask the backend.
    Acquire,
}

/// The lock state of one guest instance.
pub struct WardlockCtx {
    /// Shared with the tasks of pending acquisitions (`acquire-async`), which
    /// the instance's `pending-lock` resources abort when dropped.
    session: Arc<dyn LockSession>,
    policy: Arc<LockPolicy>,
    /// The `locks` interface's: the lock grants and which serve each name.
    locks: LockRecords,
    /// Handles created and not yet dropped, released or not, plus permit
    /// and leadership handles.
    live_handles: usize,
    /// Acquisitions still waiting or not yet turned into handles
    /// (`acquire-async`'s pending locks, 0.3.0's pending calls), and 0.3.0's
    /// open `observe` streams: shared with their
    /// [`WaitSlot`](crate::capability::pending::WaitSlot)s, which give their
    /// count back when dropped.
    waiting: Arc<AtomicUsize>,
    /// WIT 0.3.0's `not-held` and `revoked` futures the guest keeps open,
    /// shared with the futures' slots ([`WardlockCtx::future_slot`]).
    open_futures: Arc<AtomicUsize>,
    /// The semaphore permits this instance holds (WIT 0.2.0), one grant
    /// each, with the semaphore's name.
    permits: HashMap<GrantId, LockName>,
    /// The embedder's bounds on this instance's waits (a longest wait, an
    /// interrupt from another thread).
    waits: WaitBounds,
    /// The exclusive grants' tokens, shared with outbound HTTP.
    fences: FenceTokens,
    /// The leaderships this instance holds (WIT 0.2.2), with their names.
    leaderships: HashMap<GrantId, LockName>,
    /// Guarded writes out on the engine, which their grants' releases wait
    /// for (see `writes_out.rs`).
    writes: WritesOut,
}

impl WardlockCtx {
    /// A context whose session on `backend` is owned by `owner` (a description
    /// shown by status tools, e.g. `counter.wasm#3`).
    pub fn new(backend: &dyn LockBackend, policy: Arc<LockPolicy>, owner: &str) -> Self {
        Self::with_session(backend.open_session(owner), policy)
    }

    /// A context over a session the embedder opened itself (for example one
    /// wrapped to watch its grants, as the runner's hold lease does).
    pub fn with_session(session: Box<dyn LockSession>, policy: Arc<LockPolicy>) -> Self {
        WardlockCtx {
            session: Arc::from(session),
            policy,
            locks: LockRecords::default(),
            live_handles: 0,
            waiting: Arc::default(),
            open_futures: Arc::default(),
            permits: HashMap::new(),
            waits: WaitBounds::default(),
            fences: FenceTokens::default(),
            leaderships: HashMap::new(),
            writes: WritesOut::default(),
        }
    }

    /// Bounds every wait of this instance to `limit` (`None`: no bound but
    /// the guest's own timeout). A longer or endless wait ends with
    /// `timeout` after `limit`. Set it before the guest runs; a synchronous
    /// host cannot otherwise stop a wait for a lock held elsewhere.
    pub fn set_wait_limit(&mut self, limit: Option<Duration>) {
        self.waits.limit = limit;
    }

    /// The longest wait this instance may make (see
    /// [`WardlockCtx::set_wait_limit`]).
    pub fn wait_limit(&self) -> Option<Duration> {
        self.waits.limit
    }

    /// The fencing tokens of the exclusive locks this instance holds, kept
    /// current as it acquires and releases (for the outbound HTTP of
    /// `--fence-header`).
    pub fn fence_tokens(&self) -> FenceTokens {
        self.fences.clone()
    }

    /// A handle that ends this instance's waits from any thread (they return
    /// `timeout` at once, and so do later ones until it is cleared), leaving
    /// nothing queued in the backend. Take it before the Store moves to the
    /// thread that runs the plugin.
    pub fn interrupt_handle(&self) -> WaitInterrupt {
        self.waits.interrupt.clone()
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
        match self.join_existing(&name, mode)? {
            Join::Handle(handle) => Ok(handle),
            Join::Downgrade(record) => self.downgrade(name, record).await,
            Join::Acquire => {
                let grant = self
                    .acquire_traced(Request::lock(&name, mode), timeout)
                    .await?;
                Ok(self.record(name, mode, grant))
            }
        }
    }

    /// Waits for `request` in one debug span per lock operation: how long
    /// the guest waited and what it got (`WARDLOCK_LOG=debug`).
    pub(super) async fn acquire_traced(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        detached::traced_wait(&self.session, &self.waits, timeout, request).await
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
        match self.join_existing(&name, mode)? {
            Join::Handle(handle) => Ok(Some(handle)),
            Join::Downgrade(record) => self.downgrade(name, record).await.map(Some),
            Join::Acquire => {
                let grant = self.session.try_acquire(&name, mode).await?;
                Ok(grant.map(|grant| self.record(name, mode, grant)))
            }
        }
    }

    /// Releases `handle`; the backend grant goes with the last handle on it.
    ///
    /// # Errors
    /// `Released` if it was released already; `Lost` if the grant had been lost.
    pub fn release(&mut self, handle: &mut LockHandle) -> Result<(), LockError> {
        if handle.released || self.locks.ended_by_host(handle.record) {
            handle.mark_released();
            return Err(LockError::Released);
        }
        handle.mark_released();
        let Some(record) = self.locks.get_mut(handle.record) else {
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
        if handle.released || self.locks.ended_by_host(handle.record) {
            return GrantStatus::Released;
        }
        match self.locks.get(handle.record) {
            Some(record) => self.session.status(record.grant.id),
            None => GrantStatus::Lost,
        }
    }

    /// Subscribes `handle` to its grant's status: from now on
    /// [`LockHandle::until_not_held`] (the `lock.subscribe` pollable) resolves
    /// once the handle is released or the grant is no longer `held`. Event
    /// driven: the backend wakes it ([`LockSession::status_changed`]).
    pub fn subscribe(&self, handle: &mut LockHandle) {
        if !matches!(handle.watch, Watch::Idle) {
            return;
        }
        handle.watch = match self.locks.get(handle.record) {
            Some(record) if !self.locks.ended_by_host(handle.record) => Watch::Waiting(
                self.session
                    .status_changed(record.grant.id, GrantStatus::Held),
            ),
            _ => Watch::Done,
        };
    }

    /// Releases everything this instance holds now, for embedders that keep a Store
    /// alive after the guest's work ends. Existing handles report `released`.
    pub fn release_all(&mut self) {
        for id in self.locks.ids() {
            self.locks.end_by_host(id);
            let _ = self.end_record(id);
        }
        self.release_permits();
        self.resign_all();
    }

    /// `name`, if it is a valid lock name granted to this component.
    fn granted_name(&self, name: &str) -> Result<LockName, LockError> {
        let name = LockName::new(name)?;
        if !self.policy.allows(&name) {
            return Err(LockError::Denied(name.to_string()));
        }
        Ok(name)
    }

    /// Validates `name` against syntax, grants and the handle cap (which
    /// counts lock handles, pending acquisitions and permits).
    fn admit(&self, name: &str) -> Result<LockName, LockError> {
        let name = self.granted_name(name)?;
        let cap = self.policy.max_handles();
        if self.handles_in_use() >= cap {
            return Err(LockError::LimitExceeded(format!(
                "this instance already has {cap} handles (locks, pending locks and permits), the most allowed; drop some first"
            )));
        }
        Ok(name)
    }

    /// What counts against the handle cap: handles, permits, leaderships,
    /// observers and `observe` streams, and acquisitions not yet turned into
    /// handles.
    fn handles_in_use(&self) -> usize {
        self.live_handles + self.waiting.load(Ordering::SeqCst)
    }

    /// How a request for `name` in `mode` relates to the grants this instance
    /// already holds: re-entrancy joins a grant of the same mode; shared while
    /// holding exclusive downgrades; exclusive while holding only shared would
    /// wait for the instance itself.
    fn join_existing(&mut self, name: &LockName, mode: Mode) -> Result<Join, LockError> {
        self.not_a_semaphore(name, mode)?;
        let session = &self.session;
        let (exclusive, shared) = self
            .locks
            .serving(name, |grant| session.status(grant) == GrantStatus::Lost);
        let join = match (mode, exclusive, shared) {
            (Mode::Exclusive, Some(id), _) | (Mode::Shared, _, Some(id)) => id,
            (Mode::Exclusive, None, Some(_)) => {
                return Err(LockError::WouldDeadlock(name.to_string()));
            }
            (Mode::Shared, Some(id), None) => return Ok(Join::Downgrade(id)),
            (_, None, None) => return Ok(Join::Acquire),
        };
        Ok(Join::Handle(self.join(join, name, mode)))
    }

    /// Another handle on record `id`.
    fn join(&mut self, id: u64, name: &LockName, mode: Mode) -> LockHandle {
        let token = match self.locks.get_mut(id) {
            Some(record) => {
                record.handles += 1;
                record.grant.token
            }
            None => 0,
        };
        self.live_handles += 1;
        LockHandle::new(name.clone(), mode, token, id)
    }

    /// Shared while holding exclusive (record `exclusive`): a shared grant beside
    /// the exclusive one, so releasing the exclusive handles leaves a real shared
    /// grant. A backend that cannot downgrade serves the request from the
    /// exclusive grant instead.
    ///
    /// # Cancellation safety
    /// Cancel safe: nothing is recorded until the backend answered.
    async fn downgrade(&mut self, name: LockName, exclusive: u64) -> Result<LockHandle, LockError> {
        let call = self.downgrade_call(name, exclusive)?;
        let answer = call.run().await;
        self.finish_downgrade(call, answer)
    }

    fn record(&mut self, name: LockName, mode: Mode, grant: Grant) -> LockHandle {
        let id = self.locks.insert(name.clone(), mode, grant);
        if mode == Mode::Exclusive {
            self.fences.hold(id, &name, grant.token);
        }
        self.live_handles += 1;
        tracing::debug!(lock = %name, %mode, token = grant.token, "granted");
        LockHandle::new(name, mode, grant.token, id)
    }

    fn end_record(&mut self, id: u64) -> Result<(), LockError> {
        let Some(record) = self.locks.remove(id) else {
            return Ok(());
        };
        self.fences.end(id);
        tracing::debug!(lock = %record.name, token = record.grant.token, "released");
        self.writes.release(&*self.session, record.grant.id)?;
        Ok(())
    }
}

impl Drop for WardlockCtx {
    /// Releases every grant at once, even while tasks of pending acquisitions
    /// (which share the session) are still being aborted.
    fn drop(&mut self) {
        for id in self.locks.ids() {
            let _ = self.end_record(id);
        }
        self.release_permits();
        self.resign_all();
    }
}

mod detached;
mod election;
mod election_calls;
mod guarded;
mod inspect;
mod lock_records;
mod not_held;

pub(crate) use detached::TryBegun;
pub(crate) use election_calls::LeaderFeed;
pub use guarded::GuardedHolder;
pub(crate) use guarded::WriteCall;
pub(crate) use many::Planned;
pub(crate) use not_held::NotHeld;
pub(crate) use pending::Begun;
mod many;
mod pending;
mod permit;
mod revoke;
mod writes_out;

use writes_out::WritesOut;

#[cfg(test)]
mod tests;
