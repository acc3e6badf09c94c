//! The guarded store through the WIT (0.2.2 `guarded`): reads need the name
//! granted, writes an exclusive handle this instance still holds; the engine
//! then commits each write only while that grant stands (see
//! [`crate::backend::guarded`]).

use std::sync::Arc;

use super::writes_out::{WriteOut, to_answer};
use super::{LockError, WardlockCtx};
use crate::backend::{BackendError, GrantId, GuardedEntry, GuardedKey, LockSession, Mode};
use crate::capability::handle::LockHandle;
use crate::name::LockName;

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
        self.guarded_read(name)?.get(key).await
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
        self.guarded_read(name)?.keys(prefix, limit).await
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
        self.write_call(holder.0, key)?.put(value.to_vec()).await
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
        self.write_call(holder.0, key)?.delete().await
    }

    /// A read of lock `name`'s guarded store, to make away from the
    /// instance's state (0.3.0's concurrent calls await it there).
    ///
    /// # Errors
    /// `InvalidName`, `Denied` (the name must be granted, as for `acquire`).
    pub(crate) fn guarded_read(&self, name: &str) -> Result<GuardedRead, LockError> {
        Ok(GuardedRead {
            name: self.granted_name(name)?,
            session: self.session.clone(),
        })
    }

    /// A guarded write through `grant` (a lock's exclusive grant or a
    /// leadership) under `key`, counted out for the grant from now on, so
    /// that the grant's release waits for its answer (`writes_out.rs`).
    ///
    /// # Errors
    /// `InvalidRequest` / `LimitExceeded` for a bad key; `InvalidRequest` on
    /// an engine without a guarded store.
    pub(crate) fn write_call(&self, grant: GrantId, key: &str) -> Result<WriteCall, LockError> {
        let key = GuardedKey::new(key)?;
        self.session.guarded_store()?;
        Ok(WriteCall {
            out: self.writes.start(grant, self.session.clone()),
            key,
        })
    }

    /// A guarded write through `holder` under `key` ([`WardlockCtx::write_call`]
    /// for [`WardlockCtx::guarded_holder`]'s grant).
    ///
    /// # Errors
    /// As both.
    pub(crate) fn holder_write_call(
        &self,
        holder: &LockHandle,
        key: &str,
    ) -> Result<WriteCall, LockError> {
        self.write_call(self.guarded_holder(holder)?.0, key)
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

/// A read of one lock's guarded store ([`WardlockCtx::guarded_read`]).
pub(crate) struct GuardedRead {
    name: LockName,
    session: Arc<dyn LockSession>,
}

impl GuardedRead {
    /// The entry `key`, if any.
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_get`], but the name's.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<GuardedEntry>, LockError> {
        let key = GuardedKey::new(key)?;
        let store = self.session.guarded_store()?;
        Ok(store.guarded_get(&self.name, &key).await?)
    }

    /// The keys starting with `prefix`, sorted, at most `limit` (and 1024).
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_keys`], but the name's.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub(crate) async fn keys(&self, prefix: &str, limit: u32) -> Result<Vec<String>, LockError> {
        let store = self.session.guarded_store()?;
        Ok(store.guarded_keys(&self.name, prefix, limit).await?)
    }
}

/// A guarded write counted out for its grant ([`WardlockCtx::write_call`]):
/// whoever stops waiting for it, it runs to the engine's answer
/// ([`to_answer`]), and dropped unstarted it sends nothing.
pub(crate) struct WriteCall {
    out: WriteOut,
    key: GuardedKey,
}

impl WriteCall {
    /// Writes `value` under the call's key: the write's revision.
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_put`].
    ///
    /// # Cancellation safety
    /// As [`WardlockCtx::guarded_put`]: once polled, the write runs to its
    /// answer.
    pub(crate) async fn put(self, value: Vec<u8>) -> Result<u64, LockError> {
        let WriteCall { out, key } = self;
        to_answer(async move {
            let store = out.session().guarded_store()?;
            store.guarded_put(out.grant(), &key, &value).await
        })
        .await
    }

    /// Deletes the call's key: true when there was an entry.
    ///
    /// # Errors
    /// As [`WardlockCtx::guarded_put`].
    ///
    /// # Cancellation safety
    /// As [`WriteCall::put`].
    pub(crate) async fn delete(self) -> Result<bool, LockError> {
        let WriteCall { out, key } = self;
        to_answer(async move {
            let store = out.session().guarded_store()?;
            store.guarded_delete(out.grant(), &key).await
        })
        .await
    }
}

/// A backend's refusal of a call through a grant: a grant the session no
/// longer knows was ended by the host (`released`); the rest as every call's.
/// (Leaderships' calls too: `election.rs`.)
pub(super) fn ended_as_released(error: BackendError) -> LockError {
    match error {
        BackendError::UnknownGrant(_) => LockError::Released,
        error => error.into(),
    }
}
