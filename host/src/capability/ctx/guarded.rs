//! The guarded store through the WIT (0.2.2 `guarded`): reads need the name
//! granted, writes an exclusive handle this instance still holds; the engine
//! then commits each write only while that grant stands (see
//! [`crate::backend::guarded`]).

use super::writes_out::to_answer;
use super::{LockError, WardlockCtx};
use crate::backend::{BackendError, GrantId, GuardedEntry, GuardedKey, Mode};
use crate::capability::handle::LockHandle;

impl WardlockCtx {
    /// The entry `key` of lock `name`'s guarded store, if any.
    ///
    /// # Errors
    /// `InvalidName`, `Denied` as for [`WardlockCtx::acquire`];
    /// `InvalidRequest` / `LimitExceeded` for a bad key; `Unavailable` when
    /// the lock service failed; `InvalidRequest` on an engine without a
    /// guarded store.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn guarded_get(
        &self,
        name: &str,
        key: &str,
    ) -> Result<Option<GuardedEntry>, LockError> {
        let name = self.granted_name(name)?;
        let key = GuardedKey::new(key)?;
        Ok(self
            .session
            .guarded_store()?
            .guarded_get(&name, &key)
            .await?)
    }

    /// The keys of lock `name`'s guarded store starting with `prefix`,
    /// sorted, at most `limit` (and 1024).
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_get`], without the key's.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn guarded_keys(
        &self,
        name: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, LockError> {
        let name = self.granted_name(name)?;
        Ok(self
            .session
            .guarded_store()?
            .guarded_keys(&name, prefix, limit)
            .await?)
    }

    /// Writes `value` under `key` in the store of `holder`'s lock, committed
    /// only while `holder`'s grant stands on the engine: the write's revision.
    ///
    /// # Errors
    /// `Released` for a grant the host ended meanwhile; `Lost` when the
    /// grant no longer stands (nothing was written); `InvalidRequest` for a
    /// bad key; `LimitExceeded` for a key or value too large;
    /// `Unavailable` when the lock service failed.
    ///
    /// # Cancellation safety
    /// A dropped call may still commit once, and only while the grant stood:
    /// the write goes on to the engine's answer, and the grant is released
    /// (to the next guest of this host, under hand-off) only after it.
    pub async fn guarded_put(
        &self,
        holder: GuardedHolder,
        key: &str,
        value: &[u8],
    ) -> Result<u64, LockError> {
        self.put_through(holder.0, key, value).await
    }

    /// Deletes `key` from the store of `holder`'s lock, under the rules of
    /// [`WardlockCtx::guarded_put`]: true when there was an entry.
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_put`].
    ///
    /// # Cancellation safety
    /// As [`WardlockCtx::guarded_put`].
    pub async fn guarded_delete(
        &self,
        holder: GuardedHolder,
        key: &str,
    ) -> Result<bool, LockError> {
        let key = GuardedKey::new(key)?;
        self.session.guarded_store()?;
        let out = self.writes.start(holder.0, self.session.clone());
        to_answer(async move {
            let store = out.session().guarded_store()?;
            store.guarded_delete(holder.0, &key).await
        })
        .await
    }

    /// Writes `value` under `key` through `grant` (a lock's exclusive grant
    /// or a leadership), run to the engine's answer whoever stops waiting:
    /// the grant's release waits for it (`writes_out.rs`).
    ///
    /// # Cancellation safety
    /// A dropped call may still commit once, and only while the grant stood:
    /// the write goes on to its answer, and the grant stays until then.
    pub(super) async fn put_through(
        &self,
        grant: GrantId,
        key: &str,
        value: &[u8],
    ) -> Result<u64, LockError> {
        let key = GuardedKey::new(key)?;
        self.session.guarded_store()?;
        let out = self.writes.start(grant, self.session.clone());
        let value = value.to_vec();
        to_answer(async move {
            let store = out.session().guarded_store()?;
            store.guarded_put(grant, &key, &value).await
        })
        .await
    }

    /// The grant a guarded write through `handle` is checked against.
    ///
    /// # Errors
    /// `Released` for a released handle; `Lost` for a grant already gone
    /// here; `InvalidRequest` for a shared handle.
    pub fn guarded_holder(&self, holder: &LockHandle) -> Result<GuardedHolder, LockError> {
        if holder.released || self.locks.ended_by_host(holder.record) {
            return Err(LockError::Released);
        }
        let Some(record) = self.locks.get(holder.record) else {
            return Err(LockError::Lost);
        };
        if holder.mode != Mode::Exclusive || record.mode != Mode::Exclusive {
            return Err(LockError::InvalidRequest(format!(
                "a guarded write needs an exclusive holder; this handle holds \"{}\" shared",
                holder.name
            )));
        }
        Ok(GuardedHolder(record.grant.id))
    }
}

/// An exclusive grant of this instance that guarded writes are checked
/// against ([`WardlockCtx::guarded_holder`]).
#[derive(Debug, Clone, Copy)]
pub struct GuardedHolder(GrantId);

/// A backend's refusal of a call through a grant: a grant the session no
/// longer knows was ended by the host (`released`); the rest as every call's.
/// (Leaderships' calls too: `election.rs`.)
pub(super) fn ended_as_released(error: BackendError) -> LockError {
    match error {
        BackendError::UnknownGrant(_) => LockError::Released,
        error => error.into(),
    }
}
