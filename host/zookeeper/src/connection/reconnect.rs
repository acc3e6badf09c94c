//! Re-establishing a shard's ZooKeeper session in the background once it
//! ended (expired, or unheard for its whole timeout) or could not be made at
//! start, without waiting for a request, so the host is ready again as soon
//! as the service answers.
//!
//! Every attempt builds a fresh client (no stale zxid: a server re-created
//! empty refuses a client that has seen a higher zxid than its own) and a new
//! session. Between attempts: exponential back-off with jitter, capped, so a
//! thousand hosts do not stampede a recovering ensemble. While attempts fail,
//! the service is judged unreachable and requests fail at once
//! (`Connection::session`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::super::Shared;
use wardlock_backend::BackendError;
use wardlock_backend::backoff::{Reestablish, start_reconnect};

/// Starts the reconnect loop of `shared` unless one runs or the backend was
/// shut down.
pub(crate) fn start(shared: &Arc<Shared>) {
    start_reconnect(shared, &shared.runtime);
}

impl Reestablish for Shared {
    const SERVICE: &'static str = "ZooKeeper";

    fn is_closed(&self) -> bool {
        self.connection.is_closed()
    }

    fn reconnecting(&self) -> &AtomicBool {
        &self.connection.reconnecting
    }

    async fn attempt(self: Arc<Self>) -> Result<(), BackendError> {
        self.establish().await.map(|_| ())
    }
}
