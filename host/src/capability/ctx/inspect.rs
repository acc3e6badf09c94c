//! Who holds a lock and who waits (WIT 0.2.1 `contenders`).

use super::{LockError, WardlockCtx};
use crate::backend::Contenders;

impl WardlockCtx {
    /// The contenders of lock `name` (in any instance or host), holders
    /// first: the first `limit` of them (at most
    /// [`MAX_LISTED_CONTENDERS`](crate::backend::MAX_LISTED_CONTENDERS)) and
    /// how many there are. The name must be granted to this component, as
    /// for [`WardlockCtx::acquire`]: a guest sees the queues of the locks it
    /// may take, no others.
    ///
    /// # Errors
    /// `InvalidName`, `Denied`; `Unavailable` when the lock service failed
    /// or cannot list contenders.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    pub async fn contenders(&self, name: &str, limit: u32) -> Result<Contenders, LockError> {
        self.contenders_call(name)?.run(limit).await
    }
}
