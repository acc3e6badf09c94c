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

use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Shared;

/// The first back-off (the first attempt is made at once).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest back-off between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Starts the reconnect loop of `shared` unless one runs or the backend was
/// shut down.
pub(super) fn start(shared: &Arc<Shared>) {
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

/// `backoff` scaled by a random factor in [0.5, 1) ("equal jitter").
fn jittered(backoff: Duration) -> Duration {
    // A process-random hash of the time: enough randomness to spread hosts
    // apart, without a random-number crate.
    let random = std::hash::RandomState::new().hash_one(std::time::SystemTime::now());
    let fraction = (random >> 11) as f64 / (1u64 << 53) as f64;
    backoff.mul_f64(0.5 + fraction / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_half_to_whole_backoff() {
        for _ in 0..1000 {
            let delay = jittered(MAX_BACKOFF);
            assert!(delay >= MAX_BACKOFF / 2 && delay < MAX_BACKOFF, "{delay:?}");
        }
    }
}
