//! The key-value store on etcd ([`wardlock_backend::keyvalue`]): entry `K` of
//! bucket `B` is the key `<root>/%kv/B/<K escaped>`, its value the value as
//! written (`etcdctl get`), its mod revision the entry's version (never
//! repeated, even by a key deleted and written again). Entries belong to no
//! lease: they outlive their writers.
//!
//! A batch is one transaction: its conditions are every fence grant's turn
//! (the host's key covering the grant, at the create revision it was granted
//! under: see `guarded`) and every write's expectation (absent: create
//! revision 0; a version: that mod revision); its success branch the writes.
//! When a condition fails, the failure branch reads the keys the conditions
//! named, so one round trip says which: a fence key gone is `Lost`, an entry
//! not as expected a conflict.
//!
//! The room `%kv` lies under the root beside `%data`: no lock name contains
//! `%`, so no lock's prefix covers it.

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};

use super::Shared;
use super::guarded::{Holder, answered, scan_keys};
use wardlock_backend::BackendError;
use wardlock_backend::guarded::escape;
use wardlock_backend::keyvalue::{Bucket, Expect, KvCommit, KvEntry, KvKey, KvWrite, page};
use wardlock_backend::liveness::SessionHealth;

/// The key prefix of `bucket`: `<root>/%kv/<bucket>/` (a bucket name needs
/// no escaping).
fn bucket_prefix(root: &str, bucket: &Bucket) -> String {
    format!("{root}/%kv/{}/", bucket.as_str())
}

fn entry_key(root: &str, bucket: &Bucket, key: &KvKey) -> String {
    format!("{}{}", bucket_prefix(root, bucket), escape(key.as_str()))
}

/// Applies `writes` to `bucket` in one transaction conditioned on `fence`.
///
/// # Errors
/// [`BackendError::Lost`] when a fence grant's lease ended or its key no
/// longer stands (nothing written); `Unavailable` when etcd failed or did not
/// answer within the connect timeout (the batch may have committed, while
/// the fence stood); `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// A dropped call may still commit once, whole, if its transaction already
/// left, and only while the fence stood.
pub(super) async fn write(
    shared: &Shared,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[Holder],
) -> Result<KvCommit, BackendError> {
    // A lease the host's clock judged over may still live on etcd (the
    // clock ends it early); its holders were told `lost`, so none writes.
    for holder in fence {
        let live = shared
            .leases
            .lease_of(holder.generation)
            .is_some_and(|lease| lease.health() != SessionHealth::Ended);
        if !live {
            return Err(BackendError::Lost);
        }
    }
    let root = &shared.leases.config().root;
    let keys: Vec<String> = writes
        .iter()
        .map(|w| entry_key(root, bucket, &w.key))
        .collect();
    let mut conditions: Vec<Compare> = fence.iter().map(Holder::stands).collect();
    let mut reads: Vec<TxnOp> = fence
        .iter()
        .map(|h| TxnOp::get(h.key.as_str(), None))
        .collect();
    for (write, key) in writes.iter().zip(&keys) {
        let condition = match write.expect {
            Expect::Any => continue,
            Expect::Absent => Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
            Expect::Version(version) => Compare::mod_revision(
                key.as_str(),
                CompareOp::Equal,
                i64::try_from(version).unwrap_or(i64::MAX),
            ),
        };
        conditions.push(condition);
        reads.push(TxnOp::get(key.as_str(), None));
    }
    let ops: Vec<TxnOp> = writes
        .iter()
        .zip(&keys)
        .map(|(write, key)| match &write.value {
            Some(value) => TxnOp::put(key.as_str(), value.clone(), None),
            None => TxnOp::delete(key.as_str(), None),
        })
        .collect();
    let txn = Txn::new().when(conditions).and_then(ops).or_else(reads);
    let mut client = shared.leases.client().await?;
    let answer = answered(shared, "apply a key-value batch", client.txn(txn)).await?;
    if answer.succeeded() {
        return Ok(KvCommit::Committed);
    }
    // Which condition failed: the reads answer in the order of the
    // conditions, the fence's first.
    let found: Vec<Option<(i64, i64)>> = answer
        .op_responses()
        .iter()
        .map(|op| match op {
            TxnOpResponse::Get(read) => read
                .kvs()
                .first()
                .map(|kv| (kv.create_revision(), kv.mod_revision())),
            _ => None,
        })
        .collect();
    for (holder, seen) in fence.iter().zip(&found) {
        if seen.map(|(created, _)| created) != Some(holder.create_revision()) {
            return Err(BackendError::Lost);
        }
    }
    let expecting = writes.iter().filter(|w| w.expect != Expect::Any);
    for (write, seen) in expecting.zip(found.iter().skip(fence.len())) {
        let holds = match (write.expect, seen) {
            (Expect::Absent, None) => true,
            (Expect::Version(version), Some((_, modified))) => {
                u64::try_from(*modified).ok() == Some(version)
            }
            _ => false,
        };
        if !holds {
            return Ok(KvCommit::Conflict(write.key.clone()));
        }
    }
    Err(BackendError::Unavailable(
        "etcd refused a key-value batch, but every condition it was sent with holds on a read after".into(),
    ))
}

/// The entry `key` of `bucket` (a linearizable read).
///
/// # Errors
/// `Unavailable` when etcd failed or did not answer within the connect
/// timeout; `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn get(
    shared: &Shared,
    bucket: &Bucket,
    key: &KvKey,
) -> Result<Option<KvEntry>, BackendError> {
    let entry = entry_key(&shared.leases.config().root, bucket, key);
    let mut client = shared.leases.client().await?;
    let answer = answered(shared, "read a key-value entry", client.get(entry, None)).await?;
    Ok(answer.kvs().first().map(|kv| KvEntry {
        value: kv.value().to_vec(),
        version: u64::try_from(kv.mod_revision()).unwrap_or(0),
    }))
}

/// A page of `bucket`'s keys in order: the bucket's keys are read whole
/// ([`scan_keys`]) and sorted here, since escaping does not keep the order.
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn keys(
    shared: &Shared,
    bucket: &Bucket,
    skip: u64,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let prefix = bucket_prefix(&shared.leases.config().root, bucket);
    let mut listed = Vec::new();
    let read = scan_keys(
        shared,
        &prefix,
        prefix.clone(),
        "list key-value keys",
        |key| {
            listed.push(key);
        },
    );
    read.await?;
    listed.sort();
    Ok(page(listed, skip, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_live_in_a_room_no_lock_covers() {
        let bucket = Bucket::new("orders").expect("valid");
        let key = KvKey::new("a/b 100%").expect("valid");
        assert_eq!(
            entry_key("/wardlock", &bucket, &key),
            "/wardlock/%kv/orders/a%2Fb%20100%25"
        );
    }
}
