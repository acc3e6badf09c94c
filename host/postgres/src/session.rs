//! A guest's lock session on PostgreSQL: every lock goes through the host's
//! hand-off task for its name (one advisory lock per host and name; see
//! `recipe`); the session keeps what the task granted (the toolkit's
//! [`SessionGrants`]), and a grant's status is its lock's connection's.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use wardlock_backend::guarded::{check_value, not_exclusive};
use wardlock_backend::handoff::{
    HandoffSession, LocalHandoff, LocalLock, LocalLocks, NodeEngine, SessionGrants, SessionHealth,
    SessionLookup,
};
use wardlock_backend::name::LockName;
use wardlock_backend::{
    BackendError, Contenders, Contention, GrantId, GuardedEntry, GuardedKey, GuardedStore, Mode,
    Request, RequestKind, Result,
};

use crate::guarded::{self, Holder};
use crate::handoff_nodes::PgNodes;
use crate::keyvalue;
use crate::{Shared, inspect};
use wardlock_backend::keyvalue::{Bucket, KeyValue, KvCommit, KvEntry, KvKey, KvWrite, fence_for};

/// The connections a grant may live on, as [`SessionGrants`] asks.
impl SessionLookup for Shared {
    fn health(&self, generation: u64) -> Option<SessionHealth> {
        self.pool.conn_of(generation).map(|conn| conn.health())
    }

    fn watch(&self, generation: u64) -> Option<watch::Receiver<SessionHealth>> {
        self.pool.conn_of(generation).map(|conn| {
            let _ = conn.health();
            conn.liveness.watch_health()
        })
    }
}

/// A session of [`crate::PostgresBackend`]: its grants, each with its lock's
/// name and mode.
pub(crate) struct PgLockSession {
    shared: Arc<Shared>,
    grants: SessionGrants<(LockName, Mode)>,
}

impl PgLockSession {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        PgLockSession {
            shared,
            grants: SessionGrants::default(),
        }
    }

    /// The exclusive grant `grant`, as a guarded write sees it.
    fn holder(&self, grant: GrantId) -> Result<Holder> {
        let (local, (name, mode)) = self
            .grants
            .get(grant)
            .ok_or(BackendError::UnknownGrant(grant.0))?;
        if mode != Mode::Exclusive {
            return Err(not_exclusive(&format!("a shared holder of \"{name}\"")));
        }
        Ok(Holder {
            name,
            token: local.token,
            generation: local.generation,
        })
    }
}

/// The core of the session is the toolkit's; what is PostgreSQL's is where
/// a grant's connection is and which engine a lock's task queues on.
impl HandoffSession for PgLockSession {
    type Extra = (LockName, Mode);

    fn local_locks(&self) -> &LocalLocks {
        &self.shared.local_locks
    }

    fn grants(&self) -> &SessionGrants<(LockName, Mode)> {
        &self.grants
    }

    fn lookup(&self) -> &dyn SessionLookup {
        &*self.shared
    }

    fn node_engine(&self) -> Arc<dyn NodeEngine> {
        Arc::new(PgNodes {
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

    fn admit(&self, request: Request<'_>) -> Result<(Mode, (LockName, Mode))> {
        let RequestKind::Lock(mode) = request.kind else {
            return Err(BackendError::Unsupported(
                "the Postgres engine has no semaphores (advisory locks have no permits)".into(),
            ));
        };
        Ok((mode, (request.name.clone(), mode)))
    }

    fn downgraded(&self, (name, _): (LockName, Mode)) -> (LockName, Mode) {
        (name, Mode::Shared)
    }

    wardlock_backend::offers!(contention, guarded_store, key_value);
}

#[async_trait]
impl Contention for PgLockSession {
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders> {
        let all = inspect::contenders(&self.shared, name).await?;
        Ok(Contenders::head(all.into_iter(), limit))
    }
}

#[async_trait]
impl KeyValue for PgLockSession {
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

#[async_trait]
impl GuardedStore for PgLockSession {
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>> {
        guarded::get(&self.shared, name, key).await
    }

    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64> {
        let holder = self.holder(holder)?;
        check_value(value)?;
        guarded::put(&self.shared, &holder, key, value).await
    }

    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool> {
        let holder = self.holder(holder)?;
        guarded::delete(&self.shared, &holder, key).await
    }

    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>> {
        guarded::keys(&self.shared, name, prefix, limit).await
    }
}
