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

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::super::Shared;
use crate::backend::backoff::{FIRST_BACKOFF, MAX_BACKOFF, jittered};

/// Starts the reconnect loop of `shared` unless one runs or the backend was
/// shut down.
pub(in crate::backend::zookeeper) fn start(shared: &Arc<Shared>) {
    let connection = &shared.connection;
    if connection.is_closed() || connection.reconnecting.swap(true, Ordering::AcqRel) {
        return;
    }
    shared.spawn(reconnect(Arc::downgrade(shared)));
}

async fn reconnect(shared: Weak<Shared>) {
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u32;
    loop {
        let Some(now) = shared.upgrade() else {
            return;
        };
        if now.connection.is_closed() {
            now.connection.reconnecting.store(false, Ordering::Release);
            return;
        }
        attempts += 1;
        match now.establish().await {
            Ok(_) => {
                now.connection.reconnecting.store(false, Ordering::Release);
                tracing::info!(
                    attempts,
                    hosts = %now.connection.config().hosts,
                    "ZooKeeper session re-established"
                );
                return;
            }
            Err(error) if attempts == 1 => {
                tracing::warn!(%error, "ZooKeeper unreachable; reconnecting in the background");
            }
            Err(error) => tracing::debug!(%error, attempts, "reconnect attempt failed"),
        }
        drop(now);
        tokio::time::sleep(jittered(backoff)).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
