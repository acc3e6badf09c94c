//! A guest's lock session: every lock goes through the host's hand-off task
//! for its name (one queue member per host and lock; see `recipe`), a
//! leadership or a permit stands on a member of its own (see `election`,
//! `scripts`), the session keeps both kinds (the toolkit's
//! [`SessionGrants`]), and a grant's status is its member's session's, by
//! the host's clock.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;
use wardlock_backend::guarded::{check_value, not_exclusive};
use wardlock_backend::handoff::{
    HandoffSession, LocalHandoff, LocalLock, LocalLocks, NodeEngine, NodeRequest, OwnAcquire,
    SessionGrants, SessionHealth, SessionLookup, Standing,
};
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Candidate, Contender, Contenders, Contention, Election, Grant, GrantId,
    GuardedEntry, GuardedKey, GuardedStore, Leader, LeaderChange, Mode, Request, RequestKind,
    Result, Semaphores, check_permits,
};

use crate::Shared;
use crate::election;
use crate::guarded::{self, Holder};
use crate::keyvalue;
use crate::nodes::ValkeyNodes;
use crate::recipe::{self, Member};
use wardlock_backend::keyvalue::{Bucket, KeyValue, KvCommit, KvEntry, KvKey, KvWrite, fence_for};

/// The host's sessions, as [`SessionGrants`] asks about them.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        Some(self.session_of(generation)?.health())
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        let session = self.session_of(generation)?;
        // Compute now, so what the subscriber starts from is current.
        let _ = session.health();
        Some(session.liveness.watch_health())
    }
}

/// A session of [`crate::ValkeyBackend`].
pub(crate) struct ValkeyLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<Mode>,
}

impl ValkeyLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        ValkeyLockSession {
            shared,
            grants: SessionGrants::default(),
        }
    }

    /// Where `grant` stands, its mode, and the lock and queue member that
    /// cover it.
    fn member_of(&self, grant: GrantId) -> Result<(Standing, Mode, LockName, String)> {
        let (standing, mode) = self
            .grants
            .get(grant)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        let (name, member) = self
            .shared
            .layout
            .parse_member_path(&standing.path)
            .ok_or(BackendError::Lost)?;
        Ok((standing, mode, name, member))
    }

    /// The exclusive grant `grant`, as a guarded write sees it.
    fn holder(&self, grant: GrantId) -> Result<Holder> {
        let (standing, mode, name, member) = self.member_of(grant)?;
        if mode != Mode::Exclusive {
            let what = if standing.own {
                format!("a permit of semaphore \"{name}\"")
            } else {
                format!("a shared holder of \"{name}\"")
            };
            return Err(not_exclusive(&what));
        }
        Ok(Holder {
            name,
            member,
            token: standing.token,
            generation: standing.generation,
        })
    }
}

/// The core of the session is the toolkit's; what is this engine's is where
/// a grant's session is and which engine a lock's task queues on.
impl HandoffSession for ValkeyLockSession {
    type Extra = Mode;

    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn grants(&self) -> &SessionGrants<Mode> {
        &self.grants
    }

    fn lookup(&self) -> &dyn SessionLookup {
        &*self.shared
    }

    fn node_engine(&self) -> Arc<dyn NodeEngine> {
        Arc::new(ValkeyNodes {
            shared: self.shared.clone(),
        })
    }

    fn limits(&self) -> LocalHandoff {
        self.shared.config.local_handoff
    }

    /// On the backend's runtime, which outlives the caller's.
    fn spawn(&self, lock: LocalLock) {
        self.shared.runtime.spawn(lock.run());
    }

    fn admit(&self, request: Request<'_>) -> Result<(Mode, Mode)> {
        match request.kind {
            RequestKind::Lock(mode) => Ok((mode, mode)),
            // Served by `acquire_own`, never by a lock task.
            RequestKind::Permit(_) => Err(BackendError::InvalidRequest(format!(
                "a permit of \"{}\" cannot share a host's lock node",
                request.name
            ))),
        }
    }

    /// A permit is a queue member of its own (mode `p`, see `scripts`):
    /// permits hold side by side up to their count, never shared through a
    /// lock task.
    fn acquire_own(
        &self,
        request: Request<'_>,
        deadline: Option<Instant>,
        wait: bool,
    ) -> Option<OwnAcquire<Mode>> {
        let RequestKind::Permit(permits) = request.kind else {
            return None;
        };
        let shared = self.shared.clone();
        let name = request.name.clone();
        Some(Box::pin(async move {
            check_permits(&name, permits)?;
            let node = NodeRequest {
                name,
                mode: Mode::Shared,
                deadline,
                wait,
            };
            let taken = recipe::queue_for(shared, node, Member::Permit(permits)).await?;
            Ok(taken.map(|node| (node, Mode::Shared)))
        }))
    }

    fn downgraded(&self, _: Mode) -> Mode {
        Mode::Shared
    }

    wardlock_backend::offers!(contention, guarded_store, key_value, election, semaphores);
}

#[async_trait]
impl Contention for ValkeyLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        // A semaphore's permits are not a lock's contenders (the WIT's
        // `contenders`): they are never listed.
        let members: Vec<String> = recipe::members(&self.shared, name)
            .await?
            .into_iter()
            .filter(|member| letter(member) != "p")
            .collect();
        let contenders = members.iter().enumerate().map(|(at, member)| {
            let mut parts = member.splitn(3, ':');
            let _token = parts.next();
            let mode = match parts.next() {
                Some("r") => Mode::Shared,
                _ => Mode::Exclusive,
            };
            Contender {
                owner: parts.next().unwrap_or_default().to_owned(),
                mode,
                holds: holds(&members, at),
                // A grant's token is its member's shifted, plus the grants
                // the host made under it (hand-off): not the member's alone.
                token: None,
                node: Some(member.clone()),
            }
        });
        Ok(Contenders::head(contenders, limit))
    }
}

impl Semaphores for ValkeyLockSession {}

#[async_trait]
impl Election for ValkeyLockSession {
    /// A candidate member of its own (see `election`), never through
    /// host-local hand-off: a leadership is one guest's.
    async fn campaign_request(
        &self,
        candidate: Candidate<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant> {
        let deadline = wardlock_backend::handoff::deadline_after(timeout);
        let node = election::campaign(&self.shared, candidate, deadline).await?;
        Ok(self
            .grants
            .record_own(node, self.node_engine(), Mode::Exclusive))
    }

    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<()> {
        let (standing, mode, name, member) = self.member_of(leadership)?;
        if !standing.own || mode != Mode::Exclusive {
            return Err(BackendError::InvalidRequest(format!(
                "a grant of \"{name}\" is a lock or a permit, not a leadership: only a leader proclaims"
            )));
        }
        self.shared.vouched(standing.generation)?;
        election::proclaim(&self.shared, &name, &member, value).await
    }

    async fn leader(&self, name: &LockName) -> Result<Option<Leader>> {
        election::leader(&self.shared, name).await
    }

    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        election::leader_changed(self.shared.clone(), name.clone(), seen)
    }
}

/// A member's mode letter (`w`, `r`, `e`, `p`; see `scripts`).
fn letter(member: &str) -> &str {
    member.split(':').nth(1).unwrap_or("w")
}

/// Whether the member at `at` of a lock's queue (a semaphore's permits are
/// filtered out before) holds: no conflicting member ahead (a candidate,
/// mode `e`, conflicts as a writer does).
fn holds(members: &[String], at: usize) -> bool {
    let ahead = &members[..at];
    match letter(&members[at]) {
        "r" => ahead.iter().all(|m| letter(m) == "r"),
        _ => ahead.is_empty(),
    }
}

#[async_trait]
impl GuardedStore for ValkeyLockSession {
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>> {
        guarded::get(&self.shared, name, key).await
    }

    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64> {
        let holder = self.holder(holder)?;
        check_value(value)?;
        guarded::write(&self.shared, &holder, key, Some(value)).await
    }

    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool> {
        let holder = self.holder(holder)?;
        Ok(guarded::write(&self.shared, &holder, key, None).await? == 1)
    }

    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>> {
        guarded::keys(&self.shared, name, prefix, limit).await
    }
}

#[async_trait]
impl KeyValue for ValkeyLockSession {
    async fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Result<Option<KvEntry>> {
        keyvalue::get(&self.shared, bucket, key).await
    }

    async fn kv_write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[GrantId],
    ) -> Result<KvCommit> {
        let fence = fence_for(writes, fence, |grant| self.holder(grant))?;
        keyvalue::write(&self.shared, bucket, writes, &fence).await
    }

    async fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Result<Vec<String>> {
        keyvalue::keys(&self.shared, bucket, skip, limit).await
    }
}
