//! One guest's lock session on the host's ZooKeeper session(s).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::recipe::{self, OwnedNode, Waiting};
use super::{Shards, Shared, inspect, revoke, semaphore, shard_for};
use super::{election, guarded, handoff_nodes, keyvalue};
use crate::recipe::downgrade;
use crate::recipe::release;
use wardlock_backend::grant_table::{GrantEntry, GrantTable};
use wardlock_backend::guarded::{check_value, not_exclusive};
use wardlock_backend::handoff::{self, LocalHeld, SessionHealth, local_token};
use wardlock_backend::keyvalue::{Bucket, KeyValue, KvCommit, KvEntry, KvKey, KvWrite, fence_for};
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Candidate, Contenders, Contention, Election, Grant, GrantId, GrantStatus,
    GuardedEntry, GuardedKey, GuardedStore, Leader, LeaderChange, LockSession, Mode, Request,
    RequestKind, Result, Revocation, Revoked, Semaphores, StatusChange, check_permits,
    never_revoked,
};

/// One guest's [`LockSession`] (a *lock session*: its grants and waits). Every
/// lock session of the host runs on the host's *ZooKeeper sessions*
/// ([`super::connection::ZkSession`]; one per shard, a lock name always on the
/// same one); ending a lock session deletes its nodes, ending a ZooKeeper
/// session loses the grants made on it.
pub(super) struct ZkLockSession {
    shards: Shards,
    /// Written into every node: who holds or waits (for status tools).
    data: Vec<u8>,
    /// Every grant, in the toolkit's table (released with it).
    grants: GrantTable<Held>,
}

/// One grant of a lock session, with the shard it was made on.
struct Held {
    shared: Arc<Shared>,
    kind: HeldKind,
    /// The lock (or semaphore) name and the mode granted (a permit's is
    /// `Shared`): a guarded write needs an exclusive lock.
    name: LockName,
    mode: Mode,
    /// The watch on the grant's node for `__REVOKE__`, once someone asked
    /// (see `revoke`).
    revocation: Option<tokio::sync::watch::Receiver<revoke::Seen>>,
}

#[derive(Clone)]
enum HeldKind {
    /// A node of its own in the lock's queue.
    Node(OwnedNode),
    /// A share of this host's node, handed over by the host-local lock task.
    Local(LocalHeld),
    /// A semaphore permit: its lease node (see `semaphore`).
    Permit(OwnedNode),
    /// A leadership: its candidate node, the lowest of its election (see
    /// `election`); exclusive for guarded writes, never handed off.
    Leader(OwnedNode),
}

/// What to do when the revocation watch of a hand-off grant sees
/// `__REVOKE__`: tell the task, which drains the node (see `revoke`).
fn on_revoked(local: &LocalHeld) -> revoke::OnAsked {
    let local = local.clone();
    Box::new(move |path: &str| local.node_revoked(path))
}

impl Held {
    fn generation(&self) -> u64 {
        match &self.kind {
            HeldKind::Node(node) | HeldKind::Permit(node) | HeldKind::Leader(node) => {
                node.generation
            }
            HeldKind::Local(local) => local.generation,
        }
    }

    /// The revocation watch of this grant, started on first use (ending
    /// with `ended`, the grant's end); `None` for a permit or a leadership
    /// (revocation is for locks).
    fn revocation(
        &mut self,
        ended: tokio::sync::watch::Receiver<()>,
    ) -> Option<tokio::sync::watch::Receiver<revoke::Seen>> {
        let (path, on_asked) = match &self.kind {
            HeldKind::Node(node) => (node.path.clone(), None),
            HeldKind::Local(local) => (local.path.clone(), Some(on_revoked(local))),
            HeldKind::Permit(_) | HeldKind::Leader(_) => return None,
        };
        let (shared, generation) = (&self.shared, self.generation());
        let seen = self
            .revocation
            .get_or_insert_with(|| revoke::watch_node(shared, generation, path, ended, on_asked));
        Some(seen.clone())
    }

    /// The health of the ZooKeeper session the grant was made in; `None`
    /// once it is over.
    fn health(&self) -> Option<SessionHealth> {
        let session = self.shared.connection.session_of(self.generation())?;
        Some(session.health())
    }

    /// The health that session publishes, computed now (so a subscriber
    /// starts from the current value; the monitor's heartbeat ticks and
    /// client state changes wake it, see `liveness`).
    fn watch_health(&self) -> Option<tokio::sync::watch::Receiver<SessionHealth>> {
        let session = self.shared.connection.session_of(self.generation())?;
        let _ = session.health();
        Some(session.liveness.watch_health())
    }
}

impl GrantEntry for Held {
    fn token(&self) -> u64 {
        match &self.kind {
            // A node of its own is grant 0 under it (see `handoff`).
            HeldKind::Node(node) | HeldKind::Permit(node) | HeldKind::Leader(node) => {
                local_token(node.token, 0)
            }
            HeldKind::Local(local) => local.token,
        }
    }

    fn release(self) {
        match self.kind {
            HeldKind::Node(node) | HeldKind::Permit(node) | HeldKind::Leader(node) => {
                release::delete_node(&self.shared, node.generation, node.prefix, node.path);
            }
            HeldKind::Local(local) => local.release(),
        }
    }
}

impl ZkLockSession {
    pub(super) fn new(shards: Shards, data: String) -> Self {
        ZkLockSession {
            shards,
            data: data.into_bytes(),
            grants: GrantTable::default(),
        }
    }

    fn record(&self, shared: &Arc<Shared>, name: &LockName, mode: Mode, kind: HeldKind) -> Grant {
        self.grants.record(Held {
            shared: shared.clone(),
            kind,
            name: name.clone(),
            mode,
            revocation: None,
        })
    }

    /// Takes `name` on its shard: through the host-local task when hand-off is
    /// on, else with a node of its own.
    async fn take(
        &self,
        name: &LockName,
        mode: Mode,
        deadline: Option<tokio::time::Instant>,
        waiting: Waiting,
    ) -> Result<Option<Grant>> {
        let shared = shard_for(&self.shards, name);
        let kind = match shared.connection.config().local_handoff {
            Some(limits) => {
                let wait = waiting == Waiting::Wait;
                handoff_nodes::acquire(shared, limits, name, mode, deadline, wait)
                    .await?
                    .map(HeldKind::Local)
            }
            None => recipe::acquire(shared, name, mode, &self.data, deadline, waiting)
                .await?
                .map(HeldKind::Node),
        };
        Ok(kind.map(|kind| self.record(shared, name, mode, kind)))
    }
}

impl ZkLockSession {
    /// Takes what `request` asks for: a lock ([`Self::take`]) or a permit.
    ///
    /// A permit has a lease node of its own, even with host-local hand-off
    /// on (hand-off shares one node among exclusive or shared holders; a
    /// lease is neither).
    async fn take_request(
        &self,
        request: Request<'_>,
        deadline: Option<tokio::time::Instant>,
        waiting: Waiting,
    ) -> Result<Option<Grant>> {
        match request.kind {
            RequestKind::Lock(mode) => self.take(request.name, mode, deadline, waiting).await,
            RequestKind::Permit(permits) => {
                check_permits(request.name, permits)?;
                self.take_permit(request.name, permits, deadline, waiting)
                    .await
            }
        }
    }

    /// Takes a permit of semaphore `name` on its shard (see `semaphore`).
    async fn take_permit(
        &self,
        name: &LockName,
        permits: u32,
        deadline: Option<tokio::time::Instant>,
        waiting: Waiting,
    ) -> Result<Option<Grant>> {
        let shared = shard_for(&self.shards, name);
        let node = semaphore::acquire(shared, name, permits, &self.data, deadline, waiting).await?;
        Ok(node.map(|node| self.record(shared, name, Mode::Shared, HeldKind::Permit(node))))
    }
}

#[async_trait]
impl LockSession for ZkLockSession {
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        self.take_request(request, handoff::deadline_after(timeout), Waiting::Wait)
            .await?
            .ok_or_else(|| BackendError::Unavailable("lock recipe ended without a grant".into()))
    }

    async fn try_acquire_request(&self, request: Request<'_>) -> Result<Option<Grant>> {
        self.take_request(request, None, Waiting::DontWait).await
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
        // Copied out: the map's lock is not held across the await below.
        let (shared, kind, name) = self
            .grants
            .with(exclusive, |held, _| {
                (held.shared.clone(), held.kind.clone(), held.name.clone())
            })
            .ok_or(BackendError::UnknownGrant(exclusive.0))?;
        let kind = match kind {
            HeldKind::Node(node) => {
                HeldKind::Node(downgrade::downgrade(&shared, &node, &self.data).await?)
            }
            HeldKind::Local(local) => {
                HeldKind::Local(handoff::downgrade(&shared.local_locks, &local).await?)
            }
            HeldKind::Permit(_) => {
                return Err(BackendError::InvalidRequest(
                    "a semaphore permit cannot be downgraded".into(),
                ));
            }
            HeldKind::Leader(_) => {
                return Err(BackendError::InvalidRequest(
                    "a leadership cannot be downgraded".into(),
                ));
            }
        };
        Ok(self.record(&shared, &name, Mode::Shared, kind))
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

impl Semaphores for ZkLockSession {}

#[async_trait]
impl Revocation for ZkLockSession {
    async fn revocation_requested(&self, grant: GrantId) -> bool {
        let Some((seen, shared)) = self.revocation_of(grant) else {
            return false;
        };
        revoke::asked(seen, shared.connection.config().session_timeout).await
    }

    fn revoked(&self, grant: GrantId) -> Revoked {
        match self.revocation_of(grant) {
            Some((seen, _)) => revoke::revoked(seen),
            None => never_revoked(),
        }
    }

    async fn request_revocation(&self, name: &LockName) -> Result<u32> {
        revoke::request(shard_for(&self.shards, name), name).await
    }
}

#[async_trait]
impl Contention for ZkLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        inspect::contenders(shard_for(&self.shards, name), name, limit).await
    }
}

#[async_trait]
impl GuardedStore for ZkLockSession {
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>> {
        guarded::get(shard_for(&self.shards, name), name, key).await
    }

    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64> {
        check_value(value)?;
        let (shared, name, holder) = self.guard(holder)?;
        guarded::put(&shared, &name, &holder, key, value).await
    }

    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool> {
        let (shared, name, holder) = self.guard(holder)?;
        guarded::delete(&shared, &name, &holder, key).await
    }

    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>> {
        guarded::keys(shard_for(&self.shards, name), name, prefix, limit).await
    }
}

/// The key-value store lives on the first shard: it belongs to no lock name.
#[async_trait]
impl KeyValue for ZkLockSession {
    async fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Result<Option<KvEntry>> {
        keyvalue::get(self.kv_shard()?, bucket, key).await
    }

    async fn kv_write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[GrantId],
    ) -> Result<KvCommit> {
        let fence = fence_for(writes, fence, |grant| {
            let (shared, _, holder) = self.guard(grant)?;
            Ok(keyvalue::FenceNode {
                shared,
                path: holder.path,
                generation: holder.generation,
            })
        })?;
        keyvalue::write(self.kv_shard()?, bucket, writes, &fence).await
    }

    async fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Result<Vec<String>> {
        keyvalue::keys(self.kv_shard()?, bucket, skip, limit).await
    }
}

#[async_trait]
impl Election for ZkLockSession {
    /// A candidate node of its own (Curator's `LeaderLatch` layout, see
    /// `election`), never through host-local hand-off: a leadership is one
    /// guest's.
    async fn campaign_request(
        &self,
        candidate: Candidate<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        wardlock_backend::election::check_value(candidate.value)?;
        let deadline = handoff::deadline_after(timeout);
        let shared = shard_for(&self.shards, candidate.name);
        let node = election::campaign(shared, candidate, deadline).await?;
        let leader = HeldKind::Leader(node);
        Ok(self.record(shared, candidate.name, Mode::Exclusive, leader))
    }

    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<()> {
        wardlock_backend::election::check_value(value)?;
        let (shared, node) = self
            .grants
            .with(leadership, |held, _| match &held.kind {
                HeldKind::Leader(node) => Ok((held.shared.clone(), node.clone())),
                _ => Err(BackendError::InvalidRequest(format!(
                    "a grant of \"{}\" is a lock, not a leadership: only a leader proclaims",
                    held.name
                ))),
            })
            .ok_or(BackendError::UnknownGrant(leadership.0))??;
        election::proclaim(&shared, &node, value).await
    }

    async fn leader(&self, name: &LockName) -> Result<Option<Leader>> {
        election::leader(shard_for(&self.shards, name), name).await
    }

    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        election::leader_changed(shard_for(&self.shards, name).clone(), name, seen)
    }
}

impl ZkLockSession {
    /// The shard the key-value store lives on: the first.
    fn kv_shard(&self) -> Result<&Arc<Shared>> {
        self.shards.first().ok_or_else(|| {
            BackendError::Unavailable("no ZooKeeper connection is configured".into())
        })
    }

    /// What a guarded write through `grant` checks: its shard, its name and
    /// the node that must still exist (the guest's own, or this host's under
    /// hand-off, whose local grant `held` vouches for).
    fn guard(&self, grant: GrantId) -> Result<(Arc<Shared>, LockName, guarded::Holder)> {
        self.grants
            .with(grant, |held, _| Self::holder(held))
            .ok_or(BackendError::UnknownGrant(grant.0))?
    }

    /// What a guarded write through `held` checks (see [`Self::guard`]).
    fn holder(held: &Held) -> Result<(Arc<Shared>, LockName, guarded::Holder)> {
        let holder = match &held.kind {
            HeldKind::Permit(_) => {
                return Err(not_exclusive(&format!(
                    "a permit of semaphore \"{}\"",
                    held.name
                )));
            }
            _ if held.mode != Mode::Exclusive => {
                return Err(not_exclusive(&format!(
                    "a shared holder of \"{}\"",
                    held.name
                )));
            }
            HeldKind::Node(node) | HeldKind::Leader(node) => guarded::Holder {
                path: node.path.clone(),
                generation: node.generation,
                token: local_token(node.token, 0),
            },
            HeldKind::Local(local) => guarded::Holder {
                path: local.path.clone(),
                generation: local.generation,
                token: local.token,
            },
        };
        Ok((held.shared.clone(), held.name.clone(), holder))
    }
}

impl ZkLockSession {
    /// The revocation watch of `grant` (started on first use) and its shard.
    fn revocation_of(
        &self,
        grant: GrantId,
    ) -> Option<(tokio::sync::watch::Receiver<revoke::Seen>, Arc<Shared>)> {
        self.grants
            .with(grant, |held, ended| {
                Some((held.revocation(ended)?, held.shared.clone()))
            })
            .flatten()
    }
}
