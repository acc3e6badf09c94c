//! Semaphores on etcd (a layout of wardlock's own; etcd has no standard one):
//! semaphore `NAME` with `n` permits is the prefix `<root>/%sem/<NAME>/`
//! (`%` never occurs in a lock name, so no lock's prefix covers it); every
//! request for a permit puts one key `<prefix><lease hex>-<k>` (`k` counts the
//! host's requests) whose value is `n`, under the host's lease. The first `n`
//! keys by create revision hold a permit; the others wait, in create order.
//!
//! A waiter watches the prefix for deletions of keys created before its own
//! (one watch per waiter; it re-lists only when such a key goes), so the
//! waiter granted is always the earliest: grants are made in create order, and
//! a permit's fencing token (its key's create revision) is greater than every
//! permit granted before it. A key whose value names another `n` is refused
//! (`InvalidRequest`), as the memory backend refuses a mismatch.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use etcd_client::{EventType, GetOptions, SortOrder, SortTarget, WatchOptions};
use tokio::time::Instant;

use super::Shared;
use super::errors::{classify, retryable};
use super::layout::room_prefix;
use super::recipe::{Attempt, Withdraw, delete_key, owned, put_and_list};
use wardlock_backend::handoff::{OwnedNode, until};
use wardlock_backend::liveness::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, check_permits};

/// Takes one of the `permits` permits of semaphore `name`: waits until
/// `deadline` (then `Timeout`), or only tries (`wait: false`).
///
/// # Errors
/// `InvalidRequest` for 0 permits or another count than the semaphore's
/// holders and waiters use; `Timeout`; `Unavailable`; `Refused`.
///
/// # Cancellation safety
/// Cancel safe: a dropped call deletes its key (in the background).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    name: &LockName,
    permits: u32,
    deadline: Option<Instant>,
    wait: bool,
) -> Result<Option<OwnedNode>, BackendError> {
    check_permits(name, permits)?;
    let prefix = room_prefix(&shared.leases.config().root, "sem", name);
    let lease = until(deadline, shared.leases.lease()).await??;
    let number = shared.permit_keys.fetch_add(1, Ordering::Relaxed);
    let key = format!("{prefix}{:x}-{number}", lease.id);
    let mut withdraw = Withdraw {
        shared,
        key: Some(key.clone()),
        generation: lease.generation,
    };
    let taken = until(deadline, take(shared, &lease, &prefix, &key, permits, wait)).await??;
    if taken.is_some() {
        withdraw.key = None;
    }
    Ok(taken)
}

async fn take(
    shared: &Arc<Shared>,
    lease: &Arc<super::lease::Lease>,
    prefix: &str,
    key: &str,
    permits: u32,
    wait: bool,
) -> Result<Option<OwnedNode>, BackendError> {
    let mut client = shared.leases.client().await?;
    let expected = permits.to_string();
    let (mine, mut listed, mut revision) =
        put_and_list(shared, lease, prefix, key, expected.as_bytes())
            .await
            .map_err(|attempt| match attempt {
                Attempt::LeaseGone => BackendError::Lost,
                Attempt::Failed(error) => error,
            })?;
    if let Some(other) = listed.iter().find(|kv| kv.value() != expected.as_bytes()) {
        return Err(BackendError::InvalidRequest(format!(
            "semaphore asked for {permits} permits, but its holders and waiters use {}",
            String::from_utf8_lossy(other.value())
        )));
    }
    let limit = usize::try_from(permits).unwrap_or(usize::MAX);
    let mut waited = false;
    loop {
        let before: Vec<Vec<u8>> = listed
            .iter()
            .filter(|kv| kv.create_revision() < mine)
            .map(|kv| kv.key().to_vec())
            .collect();
        if before.len() < limit {
            if waited && lease.health() != SessionHealth::Live {
                return Err(BackendError::Lost);
            }
            return Ok(Some(owned(key, lease, mine)));
        }
        if !wait {
            return Ok(None);
        }
        one_goes(shared, lease, prefix, &before, revision + 1).await?;
        waited = true;
        let options = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_max_create_revision(mine);
        let mut relisted = client
            .get(prefix, Some(options))
            .await
            .map_err(|e| classify(&e, "list a semaphore"))?;
        revision = relisted.header().map_or(0, |h| h.revision());
        listed = relisted.take_kvs();
        if !listed.iter().any(|kv| kv.key() == key.as_bytes()) {
            return Err(BackendError::Lost);
        }
    }
}

/// Waits until one of the keys `before` is deleted (watching the prefix from
/// `from`), or the lease ends.
async fn one_goes(
    shared: &Arc<Shared>,
    lease: &Arc<super::lease::Lease>,
    prefix: &str,
    before: &[Vec<u8>],
    from: i64,
) -> Result<(), BackendError> {
    let mut client = shared.leases.client().await?;
    let watched = async {
        loop {
            let options = WatchOptions::new().with_prefix().with_start_revision(from);
            let mut stream = match client.watch(prefix, Some(options)).await {
                Ok(stream) => stream,
                Err(error) if retryable(&error) => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
                Err(error) => return Err(classify(&error, "watch a semaphore")),
            };
            while let Ok(Some(answer)) = stream.message().await {
                let gone = answer.canceled()
                    || answer.events().iter().any(|e| {
                        e.event_type() == EventType::Delete
                            && e.kv()
                                .is_some_and(|kv| before.iter().any(|b| b == kv.key()))
                    });
                if gone {
                    return Ok(());
                }
            }
        }
    };
    tokio::select! {
        done = watched => done,
        () = lease.liveness.until_ended() => Err(BackendError::Lost),
    }
}

/// Gives a permit back (in the background).
pub(super) fn release(shared: &Arc<Shared>, node: OwnedNode) {
    delete_key(shared, node.generation, node.path);
}
