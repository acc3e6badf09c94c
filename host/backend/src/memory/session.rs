//! A session on the in-memory backend, and the guard that makes waiting cancel safe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::Shared;
use super::election::election_queue;
use crate::election::{self, Candidate, differs};
use crate::keyvalue::{Bucket, KvCommit, KvEntry, KvKey, KvWrite, fence_for};
use crate::name::LockName;
use crate::{
    BackendError, Contenders, Contention, Election, Grant, GrantId, GrantStatus, GuardedEntry,
    GuardedKey, GuardedStore, KeyValue, Leader, LeaderChange, LockSession, Mode, Request,
    RequestKind, Result, Revocation, Revoked, Semaphores, StatusChange, check_permits,
    never_revoked, settled,
};

pub(super) struct MemorySession {
    shared: Arc<Shared>,
    id: u64,
    /// Grants this session holds, by request id.
    held: Mutex<HashMap<u64, LockName>>,
}

impl MemorySession {
    pub(super) fn new(shared: Arc<Shared>, id: u64) -> Self {
        MemorySession {
            shared,
            id,
            held: Mutex::new(HashMap::new()),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<u64, LockName>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits out an injected grant delay (zero unless a test set one).
    async fn injected_delay(&self) {
        let delay = self.shared.lock().grant_delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }

    fn record_grant(&self, name: &LockName, id: u64, token: u64) -> Grant {
        self.held().insert(id, name.clone());
        Grant {
            id: GrantId(id),
            token,
        }
    }
}

/// Withdraws a queued request unless disarmed: the request is removed whether it
/// is still waiting or was granted in the instant before its waiter went away.
struct PendingRequest<'a> {
    shared: &'a Shared,
    name: &'a LockName,
    id: u64,
    armed: bool,
}

impl Drop for PendingRequest<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.lock().remove(self.name, self.id);
            self.shared.notify_changed();
        }
    }
}

impl MemorySession {
    /// Queues a request (a lock in `mode`, or a permit of a semaphore of
    /// `permits`) and waits for its grant.
    async fn take(
        &self,
        name: &LockName,
        mode: Mode,
        permits: Option<u32>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.take_candidate(name, mode, permits, timeout, None)
            .await
    }

    /// [`Self::take`], for an election candidate (`value`) too.
    async fn take_candidate(
        &self,
        name: &LockName,
        mode: Mode,
        permits: Option<u32>,
        timeout: Option<Duration>,
        value: Option<&str>,
    ) -> Result<Grant> {
        self.injected_delay().await;
        let (id, woken) = {
            let mut state = self.shared.lock();
            let (id, token) = state.enqueue(name, self.id, mode, permits)?;
            if let Some(value) = value {
                state.candidates.insert(id, value.to_owned());
            }
            if let Some(token) = token {
                drop(state);
                self.shared.notify_changed();
                return Ok(self.record_grant(name, id, token));
            }
            let (wake, woken) = oneshot::channel();
            state.wakers.insert(id, wake);
            (id, woken)
        };
        self.shared.notify_changed();
        let mut pending = PendingRequest {
            shared: &self.shared,
            name,
            id,
            armed: true,
        };
        let outcome = match timeout {
            Some(limit) => tokio::time::timeout(limit, woken).await,
            None => Ok(woken.await),
        };
        match outcome {
            Err(_elapsed) => Err(BackendError::Timeout),
            // The waker is only dropped unsent when the request was removed.
            Ok(Err(_)) => Err(BackendError::Lost),
            Ok(Ok(())) => {
                let token = self.shared.lock().token_of(name, id);
                match token {
                    Some(token) => {
                        pending.armed = false;
                        Ok(self.record_grant(name, id, token))
                    }
                    None => Err(BackendError::Lost),
                }
            }
        }
    }

    /// Takes what [`MemorySession::take`] would, only if that needs no waiting.
    async fn try_take(
        &self,
        name: &LockName,
        mode: Mode,
        permits: Option<u32>,
    ) -> Result<Option<Grant>> {
        self.injected_delay().await;
        let granted = {
            let mut state = self.shared.lock();
            let (id, token) = state.enqueue(name, self.id, mode, permits)?;
            match token {
                Some(token) => Some((id, token)),
                None => {
                    state.remove(name, id);
                    None
                }
            }
        };
        Ok(granted.map(|(id, token)| {
            self.shared.notify_changed();
            self.record_grant(name, id, token)
        }))
    }
}

#[async_trait]
impl LockSession for MemorySession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        let (mode, permits) = queue_entry(request)?;
        self.take(request.name, mode, permits, timeout).await
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        let (mode, permits) = queue_entry(request)?;
        self.try_take(request.name, mode, permits).await
    }

    fn release(&self, grant: GrantId) -> Result<()> {
        let name = self
            .held()
            .remove(&grant.0)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        let mut state = self.shared.lock();
        // A grant taken by an injected expiry is gone from its queue already.
        if !state.lost.remove(&grant.0) {
            state.remove(&name, grant.0);
        }
        state.publish_released(grant.0);
        drop(state);
        self.shared.notify_changed();
        Ok(())
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant> {
        let name = self
            .held()
            .get(&exclusive.0)
            .cloned()
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let granted = {
            let mut state = self.shared.lock();
            if state.queues.get(&name).and_then(|q| q.permits()).is_some() {
                return Err(BackendError::InvalidRequest(format!(
                    "a permit of semaphore \"{name}\" cannot be downgraded"
                )));
            }
            state.downgrade(&name, exclusive.0, self.id)
        };
        let (id, token) = granted.ok_or(BackendError::Lost)?;
        self.shared.notify_changed();
        Ok(self.record_grant(&name, id, token))
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        if !self.held().contains_key(&grant.0) {
            return GrantStatus::Released;
        }
        self.shared.lock().held_status(self.id, grant.0)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        let watched = {
            // The state lock first, then `held`: a release (which takes them
            // one after the other, `held` first) either came before, and the
            // grant is gone, or comes after and finds the watcher to tell.
            let mut state = self.shared.lock();
            let held = self.held().contains_key(&grant.0);
            held.then(|| state.watch_grant(self.id, grant.0))
        };
        let Some(mut status) = watched else {
            return settled(GrantStatus::Released, seen);
        };
        Box::pin(async move {
            let changed = status.wait_for(|now| *now != seen).await.map(|now| *now);
            match changed {
                Ok(now) => now,
                // The watcher went without a word (the backend is gone):
                // nothing will change any more.
                Err(_) => std::future::pending().await,
            }
        })
    }

    crate::offers!(
        semaphores,
        revocation,
        contention,
        guarded_store,
        key_value,
        election
    );
}

impl Semaphores for MemorySession {}

#[async_trait]
impl Revocation for MemorySession {
    async fn revocation_requested(&self, grant: GrantId) -> bool {
        self.asked(grant)
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        self.revoked_future(grant)
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32> {
        Ok(self.shared.lock().request_revocation(name))
    }
}

#[async_trait]
impl Contention for MemorySession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        Ok(self.shared.lock().contenders(name, limit))
    }
}

#[async_trait]
impl GuardedStore for MemorySession {
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>> {
        Ok(self.shared.lock().guarded_get(name, key))
    }

    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64> {
        let name = self.held_name(holder)?;
        self.shared.lock().guarded_put(&name, holder.0, key, value)
    }

    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool> {
        let name = self.held_name(holder)?;
        self.shared.lock().guarded_delete(&name, holder.0, key)
    }

    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>> {
        Ok(self.shared.lock().guarded_keys(name, prefix, limit))
    }
}

#[async_trait]
impl KeyValue for MemorySession {
    async fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Result<Option<KvEntry>> {
        Ok(self.shared.lock().kv_get(bucket, key))
    }

    async fn kv_write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[GrantId],
    ) -> Result<KvCommit> {
        let fence = fence_for(writes, fence, |grant| Ok((grant.0, self.held_name(grant)?)))?;
        self.shared.lock().kv_write(bucket, writes, &fence)
    }

    async fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Result<Vec<String>> {
        Ok(self.shared.lock().kv_keys(bucket, skip, limit))
    }
}

#[async_trait]
impl Election for MemorySession {
    async fn campaign_request(
        &self,
        candidate: Candidate<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        election::check_value(candidate.value)?;
        let queue = election_queue(candidate.name);
        let value = Some(candidate.value);
        self.take_candidate(&queue, Mode::Exclusive, None, timeout, value)
            .await
    }

    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<()> {
        election::check_value(value)?;
        let queue = self.held_name(leadership)?;
        self.shared.lock().proclaim(&queue, leadership.0, value)?;
        self.shared.notify_changed();
        Ok(())
    }

    async fn leader(&self, name: &LockName) -> Result<Option<Leader>> {
        Ok(self.shared.lock().leader(name))
    }

    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        self.watch_leader(name, seen)
    }
}

impl MemorySession {
    /// The leader of election `name` once it differs from `seen`, woken by
    /// every change of the backend's queues (and proclaims).
    fn watch_leader(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        let shared = self.shared.clone();
        let name = name.clone();
        let mut version = shared.version.subscribe();
        Box::pin(async move {
            loop {
                version.borrow_and_update();
                let now = shared.lock().leader(&name);
                if differs(seen.as_ref(), now.as_ref()) {
                    return Ok(now);
                }
                if version.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        })
    }

    /// The name `grant` holds in this session.
    fn held_name(&self, grant: GrantId) -> Result<LockName> {
        self.held()
            .get(&grant.0)
            .cloned()
            .ok_or(BackendError::UnknownGrant(grant.0))
    }

    /// Whether the holder of `grant` was asked to give it up.
    fn asked(&self, grant: GrantId) -> bool {
        // The state lock first, then `held`, as `status_changed`.
        let state = self.shared.lock();
        self.held().contains_key(&grant.0) && state.revocation_requested(grant.0)
    }

    /// Resolves once the holder of `grant` is asked to give it up.
    fn revoked_future(&self, grant: GrantId) -> Revoked {
        let mut state = self.shared.lock();
        if self.held().contains_key(&grant.0) {
            state.revoked(grant.0)
        } else {
            never_revoked()
        }
    }
}

/// How `request` waits in a memory queue: a lock in its mode; a permit as a
/// shared entry that counts against the semaphore's `permits`.
fn queue_entry(request: Request<'_>) -> Result<(Mode, Option<u32>)> {
    match request.kind {
        RequestKind::Lock(mode) => Ok((mode, None)),
        RequestKind::Permit(permits) => {
            check_permits(request.name, permits)?;
            Ok((Mode::Shared, Some(permits)))
        }
    }
}

impl Drop for MemorySession {
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.held());
        {
            let mut state = self.shared.lock();
            for (id, name) in &held {
                if !state.lost.remove(id) {
                    state.remove(name, *id);
                }
                state.publish_released(*id);
            }
            state.owners.remove(&self.id);
            state.suspended.remove(&self.id);
        }
        self.shared.notify_changed();
    }
}
