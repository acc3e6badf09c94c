//! The lock recipe on etcd, as `etcdctl lock` and Go's `concurrency.Mutex` run
//! it (see `layout`): put the host's key under its lease if absent, then wait
//! until no conflicting key with a smaller create revision is left, watching
//! only the deletion of the nearest such key (no herd).
//!
//! Uncontended acquire is one round trip: one transaction puts the key and
//! lists the lock's contenders. After a wait, the grant is confirmed before it
//! is reported: etcd 3.4 can let a waiter through whose lease expired
//! meanwhile (etcd-io/etcd#11456), so the key must still exist under the live
//! lease; the listing that finds no blocker left shows our key too, so that
//! costs no read of its own. A waiter's watch starts now, not in the past
//! (see `watch`).
//!
//! Fencing token: the key's create revision. Revisions are cluster-wide and
//! never reset (ZooKeeper's sequence suffixes restart when a lock's directory
//! is re-created): every grant after a conflicting one was created after that
//! one was, so it has a greater revision.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget,
    Txn, TxnOp, TxnOpResponse, WatchStream,
};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Shared;
use super::errors::{classify, retryable};
use super::layout::{conflicts, contender_key, mode_of, prefix, value_of};
use super::lease::Lease;
use super::watch::{Unwatched, confirmed};
use wardlock_backend::handoff::{OwnedNode, until};
use wardlock_backend::liveness::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, Mode};

/// Pause before repeating a request that failed on a live lease.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How one attempt (on one lease) ended, when not with a result.
pub(super) enum Attempt {
    /// The lease ended: start over on the next one.
    LeaseGone,
    Failed(BackendError),
}

impl From<BackendError> for Attempt {
    fn from(error: BackendError) -> Self {
        Attempt::Failed(error)
    }
}

/// Queues this host's key for `name` in `mode` and waits for the turn (until
/// `deadline`), or only tries (`wait: false`, `None` when taken).
///
/// # Errors
/// `Timeout` past `deadline`; `Unavailable` when etcd cannot be reached;
/// `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// Cancel safe: a dropped call deletes its key (in the background).
pub(super) async fn acquire(
    shared: &Arc<Shared>,
    name: &LockName,
    mode: Mode,
    deadline: Option<Instant>,
    wait: bool,
) -> Result<Option<OwnedNode>, BackendError> {
    let prefix = prefix(&shared.leases.config().root, name);
    loop {
        let lease = until(deadline, shared.leases.lease()).await??;
        let key = contender_key(&prefix, lease.id);
        until(deadline, shared.deletes.finished(&key)).await?;
        let mut withdraw = Withdraw {
            shared,
            key: Some(key.clone()),
            generation: lease.generation,
        };
        let attempt = attempt(shared, &lease, &prefix, &key, mode, value_of(mode), wait);
        match until(deadline, attempt).await? {
            Ok(Some(node)) => {
                withdraw.key = None;
                return Ok(Some(node));
            }
            Ok(None) => return Ok(None),
            Err(Attempt::LeaseGone) => continue,
            Err(Attempt::Failed(error)) => return Err(error),
        }
    }
}

/// Deletes the key of an acquisition that did not end in a grant (clear
/// `key` once granted).
pub(super) struct Withdraw<'a> {
    pub shared: &'a Arc<Shared>,
    pub key: Option<String>,
    pub generation: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            delete_key(self.shared, self.generation, key);
        }
    }
}

/// One attempt on `lease`: puts `key` holding `value` (a lock's
/// [`value_of`] its mode; an election candidate's value, exclusive), then
/// waits for the turn (or only tries, `wait: false`).
pub(super) async fn attempt(
    shared: &Arc<Shared>,
    lease: &Arc<Lease>,
    prefix: &str,
    key: &str,
    mode: Mode,
    value: &[u8],
    wait: bool,
) -> Result<Option<OwnedNode>, Attempt> {
    let (mine, mut contenders) = put_and_list(shared, lease, prefix, key, value).await?;
    let mut waited = false;
    loop {
        let blocker = contenders
            .iter()
            .filter(|kv| kv.create_revision() < mine && kv.key() != key.as_bytes())
            .filter(|kv| conflicts(mode, mode_of(kv.value())))
            .max_by_key(|kv| kv.create_revision())
            .map(|kv| (kv.key().to_vec(), kv.create_revision()));
        let Some((blocker, created)) = blocker else {
            // After a wait the listing that found no blocker also shows our
            // key: it must still be there under the live lease (etcd 3.4
            // can let a waiter through whose lease expired meanwhile).
            if waited && !still_ours(&contenders, key, lease) {
                return Err(Attempt::LeaseGone);
            }
            return Ok(Some(owned(key, lease, mine)));
        };
        if !wait {
            return Ok(None);
        }
        let ahead = Ahead {
            key: blocker,
            created,
        };
        contenders = after(shared, lease, prefix, mine, &ahead).await?;
        waited = true;
    }
}

/// Whether the listing holds `key` under `lease`, and the lease lives.
fn still_ours(listed: &[KeyValue], key: &str, lease: &Lease) -> bool {
    listed
        .iter()
        .any(|kv| kv.key() == key.as_bytes() && kv.lease() == lease.id)
        && lease.health() == SessionHealth::Live
}

/// The node of a grant: `key`, put under `lease` at create revision `revision`.
pub(super) fn owned(key: &str, lease: &Lease, revision: i64) -> OwnedNode {
    OwnedNode {
        path: key.to_owned(),
        prefix: key.to_owned(),
        generation: lease.generation,
        token: u64::try_from(revision).unwrap_or(0),
    }
}

/// Runs `request` (a closure making one etcd request) until it succeeds, the
/// lease ends, or it fails for good.
async fn retried<T, F, Fut>(lease: &Lease, what: &str, mut request: F) -> Result<T, Attempt>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    loop {
        match request().await {
            Ok(answer) => return Ok(answer),
            Err(error) if retryable(&error) => {
                if lease.health() == SessionHealth::Ended {
                    return Err(Attempt::LeaseGone);
                }
                tracing::debug!(%error, what, "etcd request failed; repeating");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(error) => return Err(Attempt::Failed(classify(&error, what))),
        }
    }
}

/// Puts `key` (holding `value`) under `lease` if absent, in one transaction
/// with the listing of every key under `prefix` by create revision. Returns
/// the key's create revision and the listing.
///
/// A key already there on the first try is a leftover of this host: an
/// acquisition of a key waits for its deletions ([`Deletes::finished`]), and
/// election and semaphore keys are numbered, so it is a key whose background
/// delete gave up while the lease lived on. Taking it again would reuse its
/// create revision, and the fencing tokens of its grants would start over
/// below those already handed out (`node << 16 | k` with `k` from 0 again),
/// so it is deleted and a fresh key put. On a repeated try the key found is
/// the one the earlier try put (its answer was lost), and it is ours.
pub(super) async fn put_and_list(
    shared: &Arc<Shared>,
    lease: &Arc<Lease>,
    prefix: &str,
    key: &str,
    value: &[u8],
) -> Result<(i64, Vec<KeyValue>), Attempt> {
    let client = shared.leases.client().await?;
    let contenders = || {
        GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
    };
    let put = PutOptions::new().with_lease(lease.id);
    // Bounded: each round deletes the leftover it found, and a fresh key is
    // never deleted by the next (its create revision differs).
    for _ in 0..LEFTOVER_ROUNDS {
        let mut tries = 0_u32;
        let answer = retried(lease, "queue for a lock", || {
            tries += 1;
            let mut client = client.clone();
            let txn = Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, 0)])
                .and_then([
                    TxnOp::put(key, value, Some(put.clone())),
                    TxnOp::get(prefix, Some(contenders())),
                ])
                .or_else([TxnOp::get(prefix, Some(contenders()))]);
            async move { client.txn(txn).await }
        })
        .await?;
        let mut listed = Vec::new();
        for op in answer.op_responses() {
            if let TxnOpResponse::Get(mut got) = op {
                listed = got.take_kvs();
            }
        }
        let Some(own) = listed.iter().find(|kv| kv.key() == key.as_bytes()) else {
            // Neither put nor found: the lease is gone.
            return Err(Attempt::LeaseGone);
        };
        if own.lease() != lease.id {
            return Err(Attempt::LeaseGone);
        }
        let created = own.create_revision();
        if !answer.succeeded() && tries == 1 {
            tracing::warn!(
                key,
                created,
                "an earlier key of this host for the lock was never deleted; deleting it and queueing afresh"
            );
            delete_created(shared, lease, key, created).await?;
            continue;
        }
        return Ok((created, listed));
    }
    Err(Attempt::Failed(BackendError::Unavailable(format!(
        "etcd kept an earlier key {key} of this host through {LEFTOVER_ROUNDS} deletions"
    ))))
}

/// Rounds of [`put_and_list`] that find and delete a leftover key.
const LEFTOVER_ROUNDS: usize = 3;

/// Deletes `key` if it is still the one created at revision `created`, with
/// its revocation marker (if any), as [`delete_key`] does.
async fn delete_created(
    shared: &Arc<Shared>,
    lease: &Lease,
    key: &str,
    created: i64,
) -> Result<(), Attempt> {
    let client = shared.leases.client().await?;
    let marker = super::revoke::marker_of_key(&shared.leases.config().root, key);
    retried(lease, "delete a leftover key", || {
        let mut client = client.clone();
        let mut deletes = vec![TxnOp::delete(key, None)];
        deletes.extend(marker.as_deref().map(|m| TxnOp::delete(m, None)));
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, created)])
            .and_then(deletes);
        async move { client.txn(txn).await }
    })
    .await?;
    Ok(())
}

/// The contenders created up to `mine` (our own key among them, so one read
/// both finds the next blocker and confirms a grant).
async fn list(
    shared: &Arc<Shared>,
    lease: &Arc<Lease>,
    prefix: &str,
    mine: i64,
) -> Result<Vec<KeyValue>, Attempt> {
    let client = shared.leases.client().await?;
    let mut answer = retried(lease, "list a lock's contenders", || {
        let mut client = client.clone();
        let options = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(mine)
            .with_sort(SortTarget::Create, SortOrder::Ascend);
        async move { client.get(prefix, Some(options)).await }
    })
    .await?;
    Ok(answer.take_kvs())
}

/// The key a waiter waits on: one host's key for the lock, put again on
/// every acquisition of that host, so the one waited on is the one created
/// at `created`. A key of that name created later is another turn (one that
/// may wait on us), so it counts as gone.
struct Ahead {
    key: Vec<u8>,
    created: i64,
}

impl Ahead {
    fn listed_in(&self, listed: &[KeyValue]) -> bool {
        listed
            .iter()
            .any(|kv| kv.key() == self.key.as_slice() && kv.create_revision() == self.created)
    }
}

/// Waits until `ahead` is gone, or the lease ends, and returns the listing of
/// the contenders up to `mine` made after that: a confirmed watch on its key
/// from now, then the listing (see [`watch`](super::watch): a watch from the
/// last listing's revision would wait for etcd's 100 ms catch-up loop
/// whenever any write landed in between), and again after its deletion. A
/// broken stream (a leader change, a reconnect) is opened again and the
/// contenders listed again. When the key went before the watch was
/// confirmed, as behind a cached lock whose host deletes its key the moment
/// we queue, the wait costs the watch and one listing.
async fn after(
    shared: &Arc<Shared>,
    lease: &Arc<Lease>,
    prefix: &str,
    mine: i64,
    ahead: &Ahead,
) -> Result<Vec<KeyValue>, Attempt> {
    let client = shared.leases.client().await?;
    let wait = async {
        loop {
            let what = "watch a lock's contender";
            let mut stream = watched(&client, lease, ahead.key.clone(), false, what).await?;
            let listed = list(shared, lease, prefix, mine).await?;
            if !ahead.listed_in(&listed) {
                return Ok(listed);
            }
            while let Ok(Some(answer)) = stream.message().await {
                // A cancelled watch (etcd ended it): list again.
                let deleted = answer
                    .events()
                    .iter()
                    .any(|e| e.event_type() == EventType::Delete);
                if answer.canceled() || deleted {
                    return list(shared, lease, prefix, mine).await;
                }
            }
            if lease.health() == SessionHealth::Ended {
                return Err(Attempt::LeaseGone);
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    };
    tokio::select! {
        done = wait => done,
        () = lease.liveness.until_ended() => Err(Attempt::LeaseGone),
    }
}

/// A confirmed watch on `key` ([`confirmed`]), opened again while it
/// fails in a way worth repeating on a live lease.
pub(super) async fn watched(
    client: &Client,
    lease: &Lease,
    key: Vec<u8>,
    prefix: bool,
    what: &str,
) -> Result<WatchStream, Attempt> {
    loop {
        match confirmed(client, key.clone(), prefix).await {
            Ok(stream) => return Ok(stream),
            Err(Unwatched::Failed(error)) if !retryable(&error) => {
                return Err(Attempt::Failed(classify(&error, what)));
            }
            Err(failure) => {
                if lease.health() == SessionHealth::Ended {
                    return Err(Attempt::LeaseGone);
                }
                tracing::debug!(?failure, what, "etcd watch failed; repeating");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

/// Deletes `key` of lease `generation` in the background, repeating until it
/// is gone or the lease ended (then etcd deleted it). An acquisition of the
/// same key waits for it ([`Deletes::finished`]).
pub(super) fn delete_key(shared: &Arc<Shared>, generation: u64, key: String) {
    let done = shared.deletes.start(&key);
    let shared = shared.clone();
    shared.runtime.clone().spawn(async move {
        loop {
            let Some(lease) = shared.leases.lease_of(generation) else {
                break;
            };
            if lease.health() == SessionHealth::Ended {
                break;
            }
            let Ok(mut client) = shared.leases.client().await else {
                break;
            };
            // A lock key goes with its revocation marker (if any), at once.
            let marker = super::revoke::marker_of_key(&shared.leases.config().root, &key);
            let mut deletes = vec![TxnOp::delete(key.as_str(), None)];
            deletes.extend(marker.map(|m| TxnOp::delete(m, None)));
            match client.txn(Txn::new().and_then(deletes)).await {
                Ok(_) => break,
                Err(error) if retryable(&error) => tokio::time::sleep(RETRY_PAUSE).await,
                Err(error) => {
                    tracing::warn!(%error, key, "could not delete an etcd lock key; it goes with the lease");
                    break;
                }
            }
        }
        shared.deletes.finish(&key, done);
    });
}

/// Deletions in flight, by key: a key is put again only once its deletion
/// finished (the host's key for a lock is the same on one lease).
#[derive(Default)]
pub(super) struct Deletes {
    running: Mutex<HashMap<String, (u64, watch::Sender<bool>)>>,
    next: std::sync::atomic::AtomicU64,
}

impl Deletes {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, watch::Sender<bool>)>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(&self, key: &str) -> u64 {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.running()
            .insert(key.to_owned(), (number, watch::Sender::new(false)));
        number
    }

    fn finish(&self, key: &str, number: u64) {
        let mut running = self.running();
        if running.get(key).is_some_and(|(n, _)| *n == number)
            && let Some((_, done)) = running.remove(key)
        {
            let _ = done.send(true);
        }
    }

    /// Resolves once no deletion of `key` is in flight.
    pub(crate) async fn finished(&self, key: &str) {
        let pending = self.running().get(key).map(|(_, done)| done.subscribe());
        if let Some(mut done) = pending {
            let _ = done.wait_for(|done| *done).await;
        }
    }
}

/// Resolves when a contender of another host that conflicts with `node`
/// (held in `mode`) queues behind it; never if the lease ends first.
pub(super) async fn remote_contender(
    shared: Arc<Shared>,
    name: LockName,
    node: OwnedNode,
    mode: Mode,
) {
    let Some(lease) = shared.leases.lease_of(node.generation) else {
        return std::future::pending().await;
    };
    let prefix = prefix(&shared.leases.config().root, &name);
    let mine = i64::try_from(node.token).unwrap_or(i64::MAX);
    let behind = |kv: &KeyValue| {
        kv.key() != node.path.as_bytes()
            && kv.create_revision() > mine
            && conflicts(mode, mode_of(kv.value()))
    };
    // A confirmed watch from now, then one read (see `watch`): a watch from
    // the read's revision would learn of a waiter up to 100 ms late whenever
    // another write landed in between.
    let search = async {
        loop {
            let Ok(client) = shared.leases.client().await else {
                return;
            };
            let Ok(mut stream) = confirmed(&client, prefix.as_str(), true).await else {
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            };
            let options = GetOptions::new()
                .with_prefix()
                .with_min_create_revision(mine + 1);
            let mut reader = client.clone();
            match reader.get(prefix.as_str(), Some(options)).await {
                Ok(answer) if answer.kvs().iter().any(behind) => return,
                Ok(_) => {}
                Err(_) => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            }
            while let Ok(Some(answer)) = stream.message().await {
                let queued = answer
                    .events()
                    .iter()
                    .any(|e| e.event_type() == EventType::Put && e.kv().is_some_and(&behind));
                if queued {
                    return;
                }
            }
        }
    };
    tokio::select! {
        () = search => {}
        () = lease.liveness.until_ended() => std::future::pending().await,
    }
}
