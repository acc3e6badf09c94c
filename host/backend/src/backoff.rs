//! Back-off between attempts to reach a lock service again: exponential, with
//! jitter, capped, so a thousand hosts do not stampede a recovering ensemble
//! or cluster. Shared by every remote engine's reconnect loop.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::BackendError;

/// The first back-off (the first attempt is made at once).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest back-off between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// `backoff` scaled by a random factor in [0.5, 1) ("equal jitter").
fn jittered(backoff: Duration) -> Duration {
    // A process-random hash of the time: enough randomness to spread hosts
    // apart, without a random-number crate.
    let random = std::hash::RandomState::new().hash_one(std::time::SystemTime::now());
    let fraction = (random >> 11) as f64 / (1u64 << 53) as f64;
    backoff.mul_f64(0.5 + fraction / 2.0)
}

/// What a background reconnect loop needs of an engine's connection (a
/// ZooKeeper shard, etcd's leases): one loop for every engine.
pub trait Reestablish: Send + Sync + 'static {
    /// The lock service, for logs.
    const SERVICE: &'static str;

    /// True once the backend was shut down: no more attempts.
    fn is_closed(&self) -> bool;

    /// Set while a loop runs, so only one does.
    fn reconnecting(&self) -> &AtomicBool;

    /// One attempt to make a new session; `Ok` ends the loop.
    fn attempt(self: Arc<Self>) -> impl Future<Output = Result<(), BackendError>> + Send;
}

/// Starts the reconnect loop of `owner` on `runtime` unless one runs or the
/// backend was shut down: attempts at once, then after each failure waits a
/// back-off doubling from 100 ms to 2 s, each wait jittered (a random half to
/// all of it); ends when an attempt succeeds, the backend closes or goes.
pub fn start_reconnect<S: Reestablish>(owner: &Arc<S>, runtime: &tokio::runtime::Handle) {
    if owner.is_closed() || owner.reconnecting().swap(true, Ordering::AcqRel) {
        return;
    }
    runtime.spawn(reconnect(Arc::downgrade(owner)));
}

async fn reconnect<S: Reestablish>(owner: Weak<S>) {
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u32;
    loop {
        let Some(now) = owner.upgrade() else {
            return;
        };
        if now.is_closed() {
            now.reconnecting().store(false, Ordering::Release);
            return;
        }
        attempts += 1;
        match now.clone().attempt().await {
            Ok(()) => {
                now.reconnecting().store(false, Ordering::Release);
                tracing::info!(attempts, service = S::SERVICE, "session re-established");
                return;
            }
            Err(error) if attempts == 1 => {
                tracing::warn!(%error, service = S::SERVICE, "unreachable; reconnecting in the background");
            }
            Err(error) => {
                tracing::debug!(%error, attempts, service = S::SERVICE, "reconnect attempt failed")
            }
        }
        drop(now);
        tokio::time::sleep(jittered(backoff)).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
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
