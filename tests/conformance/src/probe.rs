//! Observing a lock's queue from outside, as events.

use async_trait::async_trait;
use wardlock_backend::memory::MemoryBackend;

use crate::{TEST_WAIT_LIMIT, name};

/// Watches lock queues of one engine.
#[async_trait]
pub trait Probe: Send + Sync {
    /// Waits until `lock` has exactly `len` contenders (holders plus waiters;
    /// on ZooKeeper: children of the lock's node), failing the check after
    /// [`TEST_WAIT_LIMIT`].
    async fn wait_len(&self, lock: &str, len: usize);
}

/// Probe of a [`MemoryBackend`], over its own observation API.
pub struct MemoryProbe(pub MemoryBackend);

#[async_trait]
impl Probe for MemoryProbe {
    async fn wait_len(&self, lock: &str, len: usize) {
        let lock = name(lock);
        tokio::time::timeout(TEST_WAIT_LIMIT, self.0.wait_for(&lock, |q| q.len() == len))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "queue of {lock} never had {len} contenders: {:?}",
                    self.0.snapshot(&lock)
                )
            });
    }
}
