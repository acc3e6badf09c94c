//! A guest's lock session on etcd: every lock goes through the host's
//! hand-off task for its name (one key per host and lock, under the host's
//! lease; see `keys`); every semaphore permit and every election candidate
//! has a key of its own (see `semaphore`, `election`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use super::guarded::{self, Holder, Writer};
use super::handoff_nodes::EtcdNodes;
use super::{Shared, election, inspect, keyvalue, recipe, revoke, semaphore};
use wardlock_backend::grant_table::{GrantEntry, GrantTable};
use wardlock_backend::guarded::check_value;
use wardlock_backend::handoff::{
    self, LOCAL_BITS, LocalHeld, LocalLock, OwnedNode, SessionHealth, local_token,
};
use wardlock_backend::keyvalue::{Bucket, KeyValue, KvCommit, KvEntry, KvKey, KvWrite, fence_for};
use wardlock_backend::name::LockName;
use wardlock_backend::revocation::{self, Seen};
use wardlock_backend::{
    BackendError, Candidate, Contender, Contenders, Grant, GrantId, GrantStatus, Leader,
    LeaderChange, LockSession, Mode, Request, RequestKind, Result, StatusChange,
};
use wardlock_backend::{
    Contention, Election, GuardedEntry, GuardedKey, GuardedStore, Revocation, Revoked, Semaphores,
    never_revoked,
};

/// What a grant holds.
#[derive(Clone)]
enum HeldKind {
    /// A lock in a mode, through the host's hand-off task (its name names
    /// the revocation marker and the guarded store).
    Local(LocalHeld, LockName, Mode),
    /// A semaphore permit: a key of its own.
    Permit(OwnedNode),
    /// A leadership of an election: the candidate's key of its own.
    Leader(OwnedNode, LockName),
}

/// A grant and what ends it.
struct Held {
    kind: HeldKind,
    /// The backend, whose lease the grant stands on.
    shared: Arc<Shared>,
    /// The revocation watch, started on first use (locks only).
    revocation: Option<watch::Receiver<Seen>>,
}

impl Held {
    fn generation(&self) -> u64 {
        match &self.kind {
            HeldKind::Local(local, ..) => local.generation,
            HeldKind::Permit(node) | HeldKind::Leader(node, _) => node.generation,
        }
    }

    /// The health of the lease the grant stands on; `None` once it is over.
    fn health(&self) -> Option<SessionHealth> {
        Some(self.shared.leases.lease_of(self.generation())?.health())
    }

    /// The health that lease publishes, computed now (so a subscriber
    /// starts from the current value).
    fn watch_health(&self) -> Option<watch::Receiver<SessionHealth>> {
        let lease = self.shared.leases.lease_of(self.generation())?;
        let _ = lease.health();
        Some(lease.liveness.watch_health())
    }
}

impl GrantEntry for Held {
    fn token(&self) -> u64 {
        match &self.kind {
            HeldKind::Local(local, ..) => local.token,
            // A key of its own is grant 0 under it (see `handoff`).
            HeldKind::Permit(node) | HeldKind::Leader(node, _) => local_token(node.token, 0),
        }
    }

    fn release(self) {
        let shared = &self.shared;
        match self.kind {
            HeldKind::Local(local, ..) => local.release(),
            HeldKind::Permit(node) => semaphore::release(shared, node),
            // Resigning: the next candidate leads once the key is gone.
            HeldKind::Leader(node, _) => recipe::delete_key(shared, node.generation, node.path),
        }
    }
}

/// A session of [`super::EtcdBackend`].
pub(super) struct EtcdLockSession {
    shared: Arc<Shared>,
    /// Every grant, in the toolkit's table (released with it).
    grants: GrantTable<Held>,
}

impl EtcdLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        EtcdLockSession {
            shared,
            grants: GrantTable::default(),
        }
    }

    fn record(&self, kind: HeldKind) -> Grant {
        self.grants.record(Held {
            kind,
            shared: self.shared.clone(),
            revocation: None,
        })
    }

    /// The revocation watch of `grant`, started on first use; `None` for a
    /// permit or a grant not held here.
    fn revocation_of(&self, grant: GrantId) -> Option<watch::Receiver<Seen>> {
        self.grants.with(grant, Self::revocation).flatten()
    }

    /// The revocation watch of `held` (see [`Self::revocation_of`]), ending
    /// with `ended`.
    fn revocation(held: &mut Held, ended: watch::Receiver<()>) -> Option<watch::Receiver<Seen>> {
        if let Some(seen) = &held.revocation {
            return Some(seen.clone());
        }
        let HeldKind::Local(local, name, _) = &held.kind else {
            return None;
        };
        let shared = &held.shared;
        let lease = shared.leases.lease_of(local.generation)?;
        let marker = revoke::marker_key(&shared.leases.config().root, name, lease.id);
        let revision = i64::try_from(local.token >> LOCAL_BITS).unwrap_or(i64::MAX);
        let task = local.clone();
        let seen = revoke::watch_marker(
            shared,
            marker,
            local.path.clone(),
            revision,
            ended,
            Box::new(move |path: &str| task.node_revoked(path)),
        );
        held.revocation = Some(seen.clone());
        Some(seen)
    }

    /// What `grant` is to a guarded write.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when this session does not hold it
    /// (under hand-off, the local grant is no longer this session's).
    fn writer(&self, grant: GrantId) -> Result<Writer> {
        self.grants
            .with(grant, |held, _| Self::writer_of(held))
            .ok_or(BackendError::UnknownGrant(grant.0))
    }

    /// What `held` is to a guarded write (see [`Self::writer`]).
    fn writer_of(held: &Held) -> Writer {
        match &held.kind {
            HeldKind::Local(local, name, Mode::Exclusive) => Writer::Exclusive(Holder {
                name: name.clone(),
                key: local.path.clone(),
                token: local.token,
                generation: local.generation,
            }),
            HeldKind::Local(_, name, Mode::Shared) => {
                Writer::Other(format!("a shared holder of \"{name}\""))
            }
            HeldKind::Permit(_) => Writer::Other("a semaphore permit".into()),
            // The candidate's key stands exactly while it leads.
            HeldKind::Leader(node, name) => Writer::Exclusive(Holder {
                name: name.clone(),
                key: node.path.clone(),
                token: local_token(node.token, 0),
                generation: node.generation,
            }),
        }
    }

    /// The candidate key of leadership `grant`.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when this session does not hold it;
    /// [`BackendError::InvalidRequest`] for a lock or a permit.
    fn leadership(&self, grant: GrantId) -> Result<OwnedNode> {
        self.grants
            .with(grant, |held, _| Self::leadership_of(held))
            .ok_or(BackendError::UnknownGrant(grant.0))?
    }

    /// The candidate key of `held` (see [`Self::leadership`]).
    fn leadership_of(held: &Held) -> Result<OwnedNode> {
        match &held.kind {
            HeldKind::Leader(node, _) => Ok(node.clone()),
            HeldKind::Local(_, name, _) => Err(BackendError::InvalidRequest(format!(
                "a grant of the lock \"{name}\" is no leadership: only a leader proclaims"
            ))),
            HeldKind::Permit(_) => Err(BackendError::InvalidRequest(
                "a semaphore permit is no leadership: only a leader proclaims".into(),
            )),
        }
    }

    async fn take(
        &self,
        request: Request<'_>,
        deadline: Option<Instant>,
        wait: bool,
    ) -> Result<Option<Grant>> {
        let shared = &self.shared;
        let name: &LockName = request.name;
        let mode = match request.kind {
            RequestKind::Lock(mode) => mode,
            RequestKind::Permit(permits) => {
                let node = semaphore::acquire(shared, name, permits, deadline, wait).await?;
                return Ok(node.map(|node| self.record(HeldKind::Permit(node))));
            }
        };
        let start = |start| {
            let engine = Arc::new(EtcdNodes {
                shared: shared.clone(),
            });
            let limits = shared.leases.config().local_handoff;
            let lock = LocalLock::new(engine, name.clone(), start, limits);
            shared.runtime.spawn(lock.run());
        };
        let held = handoff::ask(&shared.local_locks, name, mode, deadline, wait, start).await?;
        Ok(held.map(|local| self.record(HeldKind::Local(local, name.clone(), mode))))
    }
}

#[async_trait]
impl LockSession for EtcdLockSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.take(request, handoff::deadline_after(timeout), true)
            .await?
            .ok_or_else(|| {
                BackendError::Unavailable("the hand-off task ended without a grant".into())
            })
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        self.take(request, None, false).await
    }

    fn release(&self, grant: GrantId) -> Result<()> {
        self.grants.release(grant)
    }

    fn status(&self, grant: GrantId) -> GrantStatus {
        self.grants.status(grant, Held::health)
    }

    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange {
        self.grants.status_changed(grant, seen, Held::watch_health)
    }

    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant> {
        let kind = self
            .grants
            .with(exclusive, |held, _| held.kind.clone())
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let (local, name) = match kind {
            HeldKind::Local(local, name, _) => (local, name),
            HeldKind::Permit(_) => {
                return Err(BackendError::InvalidRequest(
                    "a semaphore permit cannot be downgraded".into(),
                ));
            }
            HeldKind::Leader(..) => {
                return Err(BackendError::InvalidRequest(
                    "a leadership cannot be downgraded".into(),
                ));
            }
        };
        let shared = handoff::downgrade(&self.shared.local_locks, &local).await?;
        Ok(self.record(HeldKind::Local(shared, name, Mode::Shared)))
    }

    wardlock_backend::offers!(
        semaphores,
        revocation,
        contention,
        guarded_store,
        key_value,
        election
    );
}

impl Semaphores for EtcdLockSession {}

#[async_trait]
impl Revocation for EtcdLockSession {
    async fn revocation_requested(&self, grant: GrantId) -> bool {
        let Some(seen) = self.revocation_of(grant) else {
            return false;
        };
        revocation::asked(seen, self.shared.leases.config().lease_ttl).await
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        match self.revocation_of(grant) {
            Some(seen) => revocation::revoked(seen),
            None => never_revoked(),
        }
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32> {
        revoke::request(&self.shared, name).await
    }
}

#[async_trait]
impl Contention for EtcdLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        let all = inspect::contenders(&self.shared, name).await?;
        let all = all.into_iter().map(|contender| Contender {
            owner: format!("lease {:x}", contender.lease),
            mode: contender.mode,
            holds: contender.holds,
            token: contender
                .holds
                .then(|| u64::try_from(contender.revision).ok())
                .flatten(),
            node: Some(contender.key),
        });
        Ok(Contenders::head(all, limit))
    }
}

#[async_trait]
impl GuardedStore for EtcdLockSession {
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>> {
        guarded::get(&self.shared, name, key).await
    }

    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64> {
        let writer = self.writer(holder)?;
        check_value(value)?;
        guarded::put(&self.shared, &writer.exclusive()?, key, value).await
    }

    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool> {
        let holder = self.writer(holder)?.exclusive()?;
        guarded::delete(&self.shared, &holder, key).await
    }

    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>> {
        guarded::keys(&self.shared, name, prefix, limit).await
    }
}

#[async_trait]
impl KeyValue for EtcdLockSession {
    async fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Result<Option<KvEntry>> {
        keyvalue::get(&self.shared, bucket, key).await
    }

    async fn kv_write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[GrantId],
    ) -> Result<KvCommit> {
        let fence = fence_for(writes, fence, |grant| self.writer(grant)?.exclusive())?;
        keyvalue::write(&self.shared, bucket, writes, &fence).await
    }

    async fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Result<Vec<String>> {
        keyvalue::keys(&self.shared, bucket, skip, limit).await
    }
}

#[async_trait]
impl Election for EtcdLockSession {
    async fn campaign_request(
        &self,
        candidate: Candidate<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        let deadline = handoff::deadline_after(timeout);
        let node = election::campaign(&self.shared, candidate, deadline).await?;
        Ok(self.record(HeldKind::Leader(node, candidate.name.clone())))
    }

    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<()> {
        let node = self.leadership(leadership)?;
        election::proclaim(&self.shared, &node, value).await
    }

    async fn leader(&self, name: &LockName) -> Result<Option<Leader>> {
        election::leader(&self.shared, name).await
    }

    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        election::leader_changed(self.shared.clone(), name, seen)
    }
}
