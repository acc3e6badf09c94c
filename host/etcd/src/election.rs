//! Leader election on etcd ([`wardlock_backend::election`]) in the layout of
//! Go's `clientv3/concurrency.Election` (`etcdctl elect`), so Go services,
//! `etcdctl elect` and wardlock guests campaign in one election:
//!
//! - election NAME is the prefix `<root>/NAME/` of lock NAME (see `layout`:
//!   `/` inside NAME written `%2F`), so `etcdctl elect <root>/NAME` meets it;
//! - each candidate is a key under the prefix, put under the host's lease in
//!   a create-if-absent transaction, holding the candidate's value;
//! - the leader is the key with the smallest create revision; a waiting
//!   candidate watches only the deletion of the key with the greatest create
//!   revision below its own (no herd), lists again, and confirms after a
//!   wait that its key still lives under a live lease (etcd 3.4,
//!   etcd-io/etcd#11456): the lock recipe's [`recipe::attempt`], exclusive.
//!
//! Several candidates of one host: Go's key is `<prefix><lease hex>`, one
//! per session and election (a second `Campaign` on the same session finds
//! its key and takes it over). Every guest of a host shares the host's lease,
//! so each candidate here is the key `<prefix><lease hex>-<k>` (`k` counts
//! the host's candidates, as the permit keys do): its own place in etcd's
//! queue, its own create revision (a term of its own), and `etcdctl elect -l`
//! shows the key and value of whichever candidate leads. No client of the
//! layout reads the key's name (Go's `Campaign`, `Leader`, `Observe` and
//! `etcdctl lock` order keys by create revision alone), so the suffix changes
//! nothing for them. The alternatives were worse: a lease per candidate
//! multiplies keep-alives and needs a loss clock per candidate; a local queue
//! behind the host's one key (as host-local hand-off does for locks) would
//! hide the host's waiting candidates from other hosts, let them jump ahead
//! of earlier remote candidates, keep one create revision (one term as seen
//! by Go) across successive local leaders, and collide with the host's own
//! lock key of the same name. The suffix also keeps a candidate's key apart
//! from the host's key for lock NAME (`<prefix><lease hex>`), whose queue it
//! shares.
//!
//! Term: the candidate key's create revision, as the lock recipe's token
//! (`local_token(create_revision, 0)`, a key of its own): leaders follow one
//! another in create order, so terms rise. [`leader`] reports the same number
//! for any leader, wardlock's or not.
//!
//! A lock and an election of one name share one queue (the same keys under
//! the same prefix, as `etcdctl lock` and `etcdctl elect` of one name do): a
//! lock holder "leads" (with its key's value: empty, or `wardlock:shared`),
//! and a candidate waits for every earlier lock key. A candidate's value may
//! therefore not be [`SHARED_VALUE`], which the lock recipe reads as a
//! reader.
//!
//! A leadership is a grant of the session: resigning deletes its key (in
//! the background, [`recipe::delete_key`]); [`proclaim`] is a put guarded by
//! the key's create revision, as Go's `Proclaim`; a guarded write compares
//! the same key and revision (see `guarded`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
};
use tokio::time::Instant;

use super::Shared;
use super::errors::classify;
use super::guarded::answered;
use super::layout::{SHARED_VALUE, prefix};
use super::recipe::{self, Attempt, Withdraw};
use super::watch::{Unwatched, confirmed};
use wardlock_backend::election::{check_value, differs};
use wardlock_backend::handoff::{OwnedNode, local_token, until};
use wardlock_backend::liveness::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Candidate, Leader, LeaderChange, Mode};

/// Consecutive failed reads or watches after which [`leader_changed`] gives
/// up (`Unavailable`); the pause before the `n`th retry is
/// `FIRST_PAUSE << n`.
const ATTEMPTS: u32 = 5;
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// The key of this host's candidate number `number` for the election at
/// `prefix`: `<prefix><lease hex>-<number>` (see the module docs).
fn candidate_key(prefix: &str, lease: i64, number: u64) -> String {
    format!("{prefix}{lease:x}-{number}")
}

/// Refuses a value a candidate may not proclaim: too long, or the lock
/// recipe's reader marker (see the module docs).
fn check_candidate_value(value: &str) -> Result<(), BackendError> {
    check_value(value)?;
    if value.as_bytes() == SHARED_VALUE {
        return Err(BackendError::InvalidRequest(format!(
            "\"{value}\" marks a reader of the lock of the same name on etcd; an election value must differ"
        )));
    }
    Ok(())
}

/// Campaigns as `candidate`: puts a candidate key under
/// the host's lease and waits (until `deadline`) until it leads.
///
/// # Errors
/// `Timeout` past `deadline`; `Lost` when the lease ended while waiting;
/// `LimitExceeded` / `InvalidRequest` for a value [`check_candidate_value`]
/// refuses; `Unavailable` when etcd cannot be reached; `Refused` when etcd
/// refused this host.
///
/// # Cancellation safety
/// Cancel safe: a dropped or timed-out campaign deletes its key (in the
/// background).
pub(super) async fn campaign(
    shared: &Arc<Shared>,
    candidate: Candidate<'_>,
    deadline: Option<Instant>,
) -> Result<OwnedNode, BackendError> {
    let Candidate { name, value } = candidate;
    check_candidate_value(value)?;
    let prefix = prefix(&shared.leases.config().root, name);
    let lease = until(deadline, shared.leases.lease()).await??;
    let number = shared.candidate_keys.fetch_add(1, Ordering::Relaxed);
    let key = candidate_key(&prefix, lease.id, number);
    let mut withdraw = Withdraw {
        shared,
        key: Some(key.clone()),
        generation: lease.generation,
    };
    let value = value.as_bytes();
    let attempt = recipe::attempt(shared, &lease, &prefix, &key, Mode::Exclusive, value, true);
    match until(deadline, attempt).await? {
        Ok(Some(node)) => {
            withdraw.key = None;
            Ok(node)
        }
        Ok(None) => Err(BackendError::Unavailable(
            "the campaign ended without leading".into(),
        )),
        Err(Attempt::LeaseGone) => Err(BackendError::Lost),
        Err(Attempt::Failed(error)) => Err(error),
    }
}

/// Puts `value` on the candidate key of leadership `node`, only while the
/// key stands under the create revision it leads with (Go's `Proclaim`).
///
/// # Errors
/// `Lost` when the lease ended (judged by the host's clock) or the key no
/// longer stands (nothing was written); `LimitExceeded` / `InvalidRequest`
/// for a refused value; `Unavailable` when etcd failed or did not answer
/// within the connect timeout (the put may have committed, while the key
/// stood); `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// A dropped call may still have put the value, and only while the key
/// stood.
pub(super) async fn proclaim(
    shared: &Shared,
    node: &OwnedNode,
    value: &str,
) -> Result<(), BackendError> {
    check_candidate_value(value)?;
    let lease = shared
        .leases
        .lease_of(node.generation)
        .filter(|lease| lease.health() != SessionHealth::Ended)
        .ok_or(BackendError::Lost)?;
    let revision = i64::try_from(node.token).unwrap_or(i64::MAX);
    let stands = Compare::create_revision(node.path.as_str(), CompareOp::Equal, revision);
    let put = TxnOp::put(
        node.path.as_str(),
        value,
        Some(PutOptions::new().with_lease(lease.id)),
    );
    let mut client = shared.leases.client().await?;
    let txn = Txn::new().when([stands]).and_then([put]);
    let answer = answered(shared, "proclaim a leader's value", client.txn(txn)).await?;
    if answer.succeeded() {
        Ok(())
    } else {
        Err(BackendError::Lost)
    }
}

/// Who leads election `name` now (Go's `Leader`: the first key by create
/// revision under the prefix), wardlock's candidates or anyone's.
///
/// # Errors
/// `Unavailable` when etcd failed or did not answer within the connect
/// timeout; `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn leader(
    shared: &Shared,
    name: &LockName,
) -> Result<Option<Leader>, BackendError> {
    let prefix = prefix(&shared.leases.config().root, name);
    look(shared, &prefix).await
}

/// The leader under `prefix`.
async fn look(shared: &Shared, prefix: &str) -> Result<Option<Leader>, BackendError> {
    let mut client = shared.leases.client().await?;
    let options = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1);
    let read = client.get(prefix, Some(options));
    let answer = answered(shared, "read an election's leader", read).await?;
    Ok(answer.kvs().first().map(leader_of))
}

/// The leader a candidate key stands for.
fn leader_of(kv: &KeyValue) -> Leader {
    Leader {
        owner: format!("lease {:x}", kv.lease()),
        value: String::from_utf8_lossy(kv.value()).into_owned(),
        term: term_of(kv.create_revision()),
    }
}

/// The term of a leader whose key has create revision `revision` (the
/// token of a key of its own, as a grant of it has).
fn term_of(revision: i64) -> u64 {
    local_token(u64::try_from(revision).unwrap_or(0), 0)
}

/// Election `name`'s leader once it differs from `seen` ([`differs`]):
/// watches the election's prefix from now, reads the leader once etcd
/// confirmed the watch, and again on every change (event driven, never
/// polling). A broken watch is opened again and read again.
///
/// # Errors
/// `Unavailable` after [`ATTEMPTS`] consecutive reads or watches failed
/// (each bounded by the connect timeout); `Refused` when etcd refused this
/// host.
///
/// # Cancellation safety
/// Cancel safe: it only observes (a dropped call cancels its watch).
pub(super) fn leader_changed(
    shared: Arc<Shared>,
    name: &LockName,
    seen: Option<Leader>,
) -> LeaderChange {
    let prefix = prefix(&shared.leases.config().root, name);
    Box::pin(async move {
        let mut failures = 0u32;
        loop {
            let failed = match until_changed(&shared, &prefix, seen.as_ref()).await {
                Ok(Some(now)) => return Ok(now),
                // The watch broke or was cancelled: watch and look again.
                Ok(None) => {
                    failures = 0;
                    continue;
                }
                Err(error @ BackendError::Refused(_)) => return Err(error),
                Err(error) => error,
            };
            failures += 1;
            if failures >= ATTEMPTS {
                return Err(failed);
            }
            tokio::time::sleep(FIRST_PAUSE * (1 << failures)).await;
        }
    })
}

/// Opens a confirmed watch on `prefix` (from etcd's current revision: see
/// `watch`), then reads the leader, and again on every change: `Some(leader)`
/// once it differs from `seen`, `None` when the watch ended (broken,
/// cancelled) without a change.
async fn until_changed(
    shared: &Shared,
    prefix: &str,
    seen: Option<&Leader>,
) -> Result<Option<Option<Leader>>, BackendError> {
    let client = shared.leases.client().await?;
    let limit = shared.leases.config().connect_timeout;
    let mut stream = match tokio::time::timeout(limit, confirmed(&client, prefix, true)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(Unwatched::Broken)) => return Ok(None),
        Ok(Err(Unwatched::Failed(error))) => return Err(classify(&error, "watch an election")),
        Err(_) => {
            return Err(BackendError::Unavailable(format!(
                "etcd did not answer within {limit:?} (to watch an election)"
            )));
        }
    };
    let now = look(shared, prefix).await?;
    if differs(seen, now.as_ref()) {
        return Ok(Some(now));
    }
    while let Ok(Some(answer)) = stream.message().await {
        if answer.canceled() {
            return Ok(None);
        }
        if answer.events().is_empty() {
            continue;
        }
        let now = look(shared, prefix).await?;
        if differs(seen, now.as_ref()) {
            return Ok(Some(now));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_of_one_host_get_keys_of_their_own_apart_from_its_lock_key() {
        let prefix = prefix("/wardlock", &LockName::new("jobs/nightly").expect("valid"));
        let first = candidate_key(&prefix, 0x694d_a20d, 0);
        let second = candidate_key(&prefix, 0x694d_a20d, 1);
        assert_eq!(first, "/wardlock/jobs%2Fnightly/694da20d-0");
        assert_ne!(first, second);
        let lock_key = super::super::layout::contender_key(&prefix, 0x694d_a20d);
        assert_ne!(first, lock_key);
        assert!(first.starts_with(&prefix));
    }

    #[test]
    fn values_a_candidate_may_not_proclaim() {
        assert_eq!(check_candidate_value("host-a:8080"), Ok(()));
        assert!(matches!(
            check_candidate_value("wardlock:shared"),
            Err(BackendError::InvalidRequest(_))
        ));
        let long = "x".repeat(wardlock_backend::election::MAX_VALUE_BYTES + 1);
        assert!(matches!(
            check_candidate_value(&long),
            Err(BackendError::LimitExceeded(_))
        ));
    }

    #[test]
    fn terms_are_tokens_of_a_key_of_its_own() {
        assert_eq!(term_of(7), local_token(7, 0));
        assert!(term_of(8) > term_of(7));
    }
}
