//! The host-side state behind `lock.subscribe-revocation`'s pollable (WIT
//! 0.2.0): a child resource of the lock handle that waits for the backend's
//! [`crate::backend::Revocation::revoked`].

use crate::backend::Revoked;

/// What `lock.subscribe-revocation`'s pollable waits on: ready once someone
/// asked the handle's holder to give the lock up, and ready for good from
/// then on.
pub struct RevocationWatch {
    /// `None` once it resolved.
    revoked: Option<Revoked>,
}

impl std::fmt::Debug for RevocationWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.revoked {
            Some(_) => "RevocationWatch(waiting)",
            None => "RevocationWatch(requested)",
        })
    }
}

impl RevocationWatch {
    pub(crate) fn new(revoked: Revoked) -> Self {
        RevocationWatch {
            revoked: Some(revoked),
        }
    }

    /// True once revocation was requested (seen by [`Self::until_requested`]).
    pub fn is_requested(&self) -> bool {
        self.revoked.is_none()
    }

    /// Resolves once revocation of the handle's grant was requested.
    ///
    /// # Errors
    /// None: it only waits.
    ///
    /// # Cancellation safety
    /// Cancel safe: the backend's future stays here, so a dropped wait is
    /// taken up again by the next.
    pub async fn until_requested(&mut self) {
        if let Some(revoked) = &mut self.revoked {
            revoked.as_mut().await;
            self.revoked = None;
        }
    }
}

/// `lock.subscribe-revocation`'s pollable (`wasi:io/poll`).
#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for RevocationWatch {
    async fn ready(&mut self) {
        self.until_requested().await;
    }
}
