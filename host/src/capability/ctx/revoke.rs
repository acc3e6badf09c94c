//! Revocation (WIT 0.2.0): asking a lock's holders to give it up, and a
//! holder learning that it was asked (see `backend::revocation`).

use super::{LockError, LockHandle, WardlockCtx};
use crate::backend::never_revoked;
use crate::capability::revocation::RevocationWatch;

impl WardlockCtx {
    /// Whether someone asked the holder of `handle`'s grant to give it up.
    /// False once the handle is released (or its grant lost). The future
    /// borrows neither the context nor the handle.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    pub fn revocation_requested(
        &self,
        handle: &LockHandle,
    ) -> impl Future<Output = bool> + Send + use<> {
        let grant = self.live_grant(handle);
        let session = self.session.clone();
        async move {
            match grant {
                Some(grant) => match session.revocation() {
                    Ok(revocation) => revocation.revocation_requested(grant).await,
                    Err(_) => false,
                },
                None => false,
            }
        }
    }

    /// A watch that resolves once someone asks the holder of `handle`'s grant
    /// to give it up (at once if someone did already); never for a released
    /// handle. Event driven: the backend wakes it.
    pub fn subscribe_revocation(&self, handle: &LockHandle) -> RevocationWatch {
        RevocationWatch::new(match self.live_grant(handle) {
            Some(grant) => match self.session.revocation() {
                Ok(revocation) => revocation.revoked(grant),
                Err(_) => never_revoked(),
            },
            None => never_revoked(),
        })
    }

    /// Asks every current holder of the lock `name` (in any instance or
    /// host) to give it up; returns how many were asked. The name must be
    /// granted to this component, as for [`WardlockCtx::acquire`].
    ///
    /// # Errors
    /// `InvalidName`, `Denied`; `Unavailable` when the lock service failed
    /// or has no revocation.
    ///
    /// # Cancellation safety
    /// Cancel safe: each holder asked is asked for good; nothing to undo.
    pub async fn request_revocation(&self, name: &str) -> Result<u32, LockError> {
        self.revocation_call(name)?.run().await
    }

    /// The backend grant behind `handle`, unless the handle was released or
    /// its grant ended.
    fn live_grant(&self, handle: &LockHandle) -> Option<crate::backend::GrantId> {
        if handle.released || self.locks.ended_by_host(handle.record) {
            return None;
        }
        self.locks.get(handle.record).map(|r| r.grant.id)
    }
}
