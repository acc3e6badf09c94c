//! Back-off between attempts to reach a lock service again: exponential, with
//! jitter, capped, so a thousand hosts do not stampede a recovering ensemble
//! or cluster. Shared by every remote engine's reconnect loop.

use std::hash::BuildHasher;
use std::time::Duration;

/// The first back-off (the first attempt is made at once).
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest back-off between two attempts.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// `backoff` scaled by a random factor in [0.5, 1) ("equal jitter").
pub(crate) fn jittered(backoff: Duration) -> Duration {
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
