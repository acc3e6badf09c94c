//! Semaphores on etcd (a layout of wardlock's own; etcd has no standard one):
//! semaphore `NAME` with `n` permits is the prefix `<root>/%sem/<NAME>/`
//! (`%` never occurs in a lock name, so no lock's prefix covers it); every
//! request for a permit puts one key `<prefix><lease hex>-<k>` (`k` counts the
//! host's requests) whose value is `n`, under the host's lease. The first `n`
//! keys by create revision hold a permit; the others wait, in create order.
//!
//! A waiter watches the prefix for deletions of keys created before its own
//! (one watch per waiter, from etcd's current revision, confirmed before the
//! waiter lists again; it re-lists only when such a key goes), so the
//! waiter granted is always the earliest: grants are made in create order, and
//! a permit's fencing token (its key's create revision) is greater than every
//! permit granted before it. A key whose value names another `n` is refused
//! (`InvalidRequest`), as the memory backend refuses a mismatch.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use etcd_client::{EventType, GetOptions, KeyValue, SortOrder, SortTarget, WatchStream};
use tokio::time::Instant;

use super::Shared;
use super::errors::classify;
use super::layout::room_prefix;
use super::recipe::{self, Attempt, Withdraw, delete_key, owned, put_and_list};
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
    let client = shared.leases.client().await?;
    let expected = permits.to_string();
    let (mine, mut listed) = put_and_list(shared, lease, prefix, key, expected.as_bytes())
        .await
        .map_err(lost_if_gone)?;
    if let Some(other) = listed.iter().find(|kv| kv.value() != expected.as_bytes()) {
        return Err(BackendError::InvalidRequest(format!(
            "semaphore asked for {permits} permits, but its holders and waiters use {}",
            String::from_utf8_lossy(other.value())
        )));
    }
    let limit = usize::try_from(permits).unwrap_or(usize::MAX);
    let before = |listed: &[KeyValue]| -> Vec<Vec<u8>> {
        listed
            .iter()
            .filter(|kv| kv.create_revision() < mine)
            .map(|kv| kv.key().to_vec())
            .collect()
    };
    if before(&listed).len() < limit {
        return Ok(Some(owned(key, lease, mine)));
    }
    if !wait {
        return Ok(None);
    }
    // One confirmed watch on the prefix for the whole wait, and a listing
    // after it is confirmed and after every deletion of a key ahead (see
    // `watch`: a watch from the listing's revision could wait 100 ms).
    let waiting = async {
        loop {
            let mut stream =
                recipe::watched(&client, lease, prefix.into(), true, "watch a semaphore")
                    .await
                    .map_err(lost_if_gone)?;
            loop {
                let options = GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Create, SortOrder::Ascend)
                    .with_max_create_revision(mine);
                listed = client
                    .clone()
                    .get(prefix, Some(options))
                    .await
                    .map_err(|e| classify(&e, "list a semaphore"))?
                    .take_kvs();
                if !listed.iter().any(|kv| kv.key() == key.as_bytes()) {
                    return Err(BackendError::Lost);
                }
                let ahead = before(&listed);
                if ahead.len() < limit {
                    if lease.health() != SessionHealth::Live {
                        return Err(BackendError::Lost);
                    }
                    return Ok(Some(owned(key, lease, mine)));
                }
                if !one_goes(&mut stream, &ahead).await {
                    // etcd ended the watch: open it again, list again.
                    break;
                }
            }
        }
    };
    tokio::select! {
        taken = waiting => taken,
        () = lease.liveness.until_ended() => Err(BackendError::Lost),
    }
}

/// A semaphore's request has one lease: its end loses the request.
fn lost_if_gone(attempt: Attempt) -> BackendError {
    match attempt {
        Attempt::LeaseGone => BackendError::Lost,
        Attempt::Failed(error) => error,
    }
}

/// Waits on `stream` until one of the keys `ahead` is deleted (`true`), or
/// the watch ends (`false`).
async fn one_goes(stream: &mut WatchStream, ahead: &[Vec<u8>]) -> bool {
    while let Ok(Some(answer)) = stream.message().await {
        if answer.canceled() {
            return false;
        }
        let gone = answer.events().iter().any(|e| {
            e.event_type() == EventType::Delete
                && e.kv().is_some_and(|kv| ahead.iter().any(|a| a == kv.key()))
        });
        if gone {
            return true;
        }
    }
    false
}

/// Gives a permit back (in the background).
pub(super) fn release(shared: &Arc<Shared>, node: OwnedNode) {
    delete_key(shared, node.generation, node.path);
}
