//! Waits that time out at every moment around their queueing on the lock
//! service, from another host than the holder's: none is granted, and none
//! leaves anything queued, so the lock is free once its holder lets go.
//!
//! Timeouts of 0.1-3.9 ms against a queueing round trip of about a
//! millisecond, 8 waits at a time on one host, 1,000 in all: some end
//! before their request leaves, some while it is on the server, some just
//! after its answer arrived. A Valkey/Redis wait dropped in that last
//! window left its member queued for the host's lifetime (found by the
//! fault matrix's deadline race once in a CI run; this check caught it in 4
//! runs out of 5).

use std::sync::Arc;
use std::time::Duration;

use wardlock_host::backend::BackendError;
use wardlock_host::name::LockName;
use wardlock_host::{LockBackend, Mode};

use crate::TEST_WAIT_LIMIT;

/// Waits started at once, per round.
const AT_ONCE: u64 = 8;
/// Rounds: 1,000 waits in all.
const ROUNDS: u64 = 125;

/// While a session of `holder` holds `lock`, runs the waits on `waiter`,
/// then lets go; a fresh wait on `waiter` must then be granted within
/// [`TEST_WAIT_LIMIT`].
///
/// # Errors
/// What went wrong (a wait that answered anything but `timeout`, a fresh
/// wait not granted), for the caller to fail with beside the lock
/// service's state.
pub async fn leave_the_lock_free(
    holder: &dyn LockBackend,
    waiter: Arc<dyn LockBackend>,
    lock: &LockName,
) -> Result<(), String> {
    let holding = holder.open_session("holder");
    let held = holding
        .acquire(lock, Mode::Exclusive, None)
        .await
        .map_err(|e| format!("the holder's grant of {lock}: {e}"))?;
    for round in 0..ROUNDS {
        let waits = (0..AT_ONCE).map(|i| {
            let (waiter, lock) = (waiter.clone(), lock.clone());
            let timeout = Duration::from_micros(100 * (1 + (round * AT_ONCE + i) % 39));
            tokio::spawn(async move {
                let session = waiter.open_session("waiter");
                session.acquire(&lock, Mode::Exclusive, Some(timeout)).await
            })
        });
        for wait in futures_util::future::join_all(waits).await {
            let answer = wait.map_err(|e| format!("a wait's task: {e}"))?;
            if !matches!(answer, Err(BackendError::Timeout)) {
                return Err(format!(
                    "round {round}: a wait behind the holder of {lock} answered {answer:?}"
                ));
            }
        }
    }
    holding
        .release(held.id)
        .map_err(|e| format!("the holder's release: {e}"))?;
    let fresh = waiter.open_session("fresh");
    let granted = fresh
        .acquire(lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .map_err(|e| format!("a fresh wait after the holder let go of {lock}: {e}"))?;
    fresh
        .release(granted.id)
        .map_err(|e| format!("the fresh wait's release: {e}"))
}
