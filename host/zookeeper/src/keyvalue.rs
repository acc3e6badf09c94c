//! The key-value store on ZooKeeper ([`wardlock_backend::keyvalue`]): one
//! persistent node per entry, `<root>/%kv/<bucket>/<escaped key>`, its data
//! the value as written (readable with `zkCli.sh get`), its `version` the
//! entry's version. A batch is one `multi`: first a `check` of every fence
//! grant's lock node (ephemeral to the ZooKeeper session it was granted in,
//! so a holder whose session expired finds the check failing and nothing
//! written, whatever its own clock believed), then each write, with the
//! node version it expects.
//!
//! The room `%kv` sits beside the guarded store's `%data`: no lock name
//! contains `%`, so no lock's queue, Curator, kazoo or `contenders` sees an
//! entry.
//!
//! A version is ZooKeeper's per-node `version`: a key deleted and created
//! again starts over at 0, so a compare-and-write that read version 0 before
//! such a delete and create succeeds against the new entry (the ABA case
//! Curator's `DistributedAtomicLong` has too). `increment` never deletes.

use std::sync::Arc;

use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError};

use super::Shared;
use super::guarded::{bounded_call, children_of, read_node, standing_session, unavailable};
use super::recipe::connect;
use crate::connection::retry;
use crate::recipe::create::ensure_parent;
use wardlock_backend::BackendError;
use wardlock_backend::guarded::{escape, unescape};
use wardlock_backend::handoff::SessionHealth;
use wardlock_backend::keyvalue::{Bucket, Expect, KvCommit, KvEntry, KvKey, KvWrite, page};

/// A fence grant: the lock node that must still exist, and the ZooKeeper
/// session (generation) it was granted in.
pub(super) struct FenceNode {
    pub shared: Arc<Shared>,
    pub path: String,
    pub generation: u64,
}

/// Attempts of one batch beyond one per write (each a round trip: a first
/// write to a key, or to a bucket, takes one or two more).
const ATTEMPTS: usize = 6;

/// The directory of `bucket`'s entries: `<root>/%kv/<bucket>`.
fn directory(shared: &Shared, bucket: &Bucket) -> String {
    let root = shared.connection.config().root.trim_end_matches('/');
    format!("{root}/%kv/{}", bucket.as_str())
}

fn entry_path(dir: &str, key: &KvKey) -> String {
    format!("{dir}/{}", escape(key.as_str()))
}

/// How one write of a batch goes to ZooKeeper in this attempt.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `setData` (any version, or the expected one).
    Set,
    /// `create`: the entry is absent (or expected absent).
    Create,
    /// `delete` (any version, or the expected one).
    Delete,
    /// Nothing: a plain delete of an entry that is already gone.
    Skip,
}

fn first_step(write: &KvWrite) -> Step {
    match (&write.value, write.expect) {
        (None, _) => Step::Delete,
        (Some(_), Expect::Absent) => Step::Create,
        (Some(_), _) => Step::Set,
    }
}

fn version_of(expect: Expect) -> Option<i32> {
    match expect {
        Expect::Version(version) => Some(i32::try_from(version).unwrap_or(i32::MAX)),
        Expect::Any | Expect::Absent => None,
    }
}

/// Applies `writes` to `bucket` in one `multi` that checks `fence` first.
///
/// # Errors
/// [`BackendError::Lost`] when a fence node is gone or its session ended
/// (nothing written); [`BackendError::Unavailable`] when ZooKeeper failed or
/// did not answer within the session timeout, or an earlier attempt's answer
/// was lost before the fence went (it may have committed).
///
/// # Cancellation safety
/// A dropped call may still commit once, whole, if its request already
/// left: the server applies it only while every fence node exists.
pub(super) async fn write(
    shared: &Arc<Shared>,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[FenceNode],
) -> Result<KvCommit, BackendError> {
    bounded(shared, attempt_all(shared, bucket, writes, fence)).await
}

async fn attempt_all(
    shared: &Arc<Shared>,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[FenceNode],
) -> Result<KvCommit, BackendError> {
    if writes.is_empty() {
        return Ok(KvCommit::Committed);
    }
    // A fenced batch goes through the first fence grant's ZooKeeper
    // session, while the host's clock has not judged any of them ended.
    let session = match fence.first() {
        Some(first) => {
            for node in fence {
                standing_session(&node.shared, node.generation)?;
            }
            standing_session(&first.shared, first.generation)?
        }
        None => connect(shared, None).await?,
    };
    let dir = directory(shared, bucket);
    let mut steps: Vec<Step> = writes.iter().map(first_step).collect();
    let mut answer_lost = false;
    for _ in 0..ATTEMPTS + writes.len() {
        let mut multi = session.client.new_multi_writer();
        for node in fence {
            multi
                .add_check_version(&node.path, -1)
                .map_err(|e| unavailable("check a declared lock", &e))?;
        }
        // Which write each operation after the checks is.
        let mut sent = Vec::with_capacity(writes.len());
        for (index, (write, step)) in writes.iter().zip(&steps).enumerate() {
            let path = entry_path(&dir, &write.key);
            let version = version_of(write.expect);
            let added = match (step, &write.value) {
                (Step::Skip, _) => continue,
                (Step::Set, Some(value)) => multi.add_set_data(&path, value, version),
                (Step::Create, Some(value)) => multi.add_create(
                    &path,
                    value,
                    &CreateMode::Persistent.with_acls(shared.acls()),
                ),
                (Step::Delete, _) => multi.add_delete(&path, version),
                (_, None) => continue,
            };
            added.map_err(|e| unavailable("add a write", &e))?;
            sent.push(index);
        }
        if sent.is_empty() && fence.is_empty() {
            return Ok(KvCommit::Committed);
        }
        let failed = match multi.commit().await {
            Ok(_) => return Ok(KvCommit::Committed),
            Err(MultiWriteError::OperationFailed { index, source }) => (index, source),
            Err(MultiWriteError::RequestFailed { source }) => {
                answer_lost |= matches!(
                    source,
                    ZkError::ConnectionLoss | ZkError::Timeout | ZkError::Custom(_)
                );
                if !retry::after(&session, source).await? {
                    return Err(gone(answer_lost, !fence.is_empty()));
                }
                continue;
            }
        };
        let (index, source) = failed;
        if index < fence.len() {
            return Err(gone(answer_lost, true));
        }
        let Some(&which) = sent.get(index - fence.len()) else {
            return Err(unavailable("apply a batch", &source));
        };
        let write = &writes[which];
        match (source, write.expect, steps[which]) {
            // The entry is not what the write expected.
            (ZkError::BadVersion, _, _)
            | (ZkError::NoNode, Expect::Version(_), _)
            | (ZkError::NodeExists, Expect::Absent, _) => {
                return Ok(KvCommit::Conflict(write.key.clone()));
            }
            // A plain delete of an entry already gone: nothing to delete.
            (ZkError::NoNode, Expect::Any, Step::Delete) => steps[which] = Step::Skip,
            // A plain first write: create the node.
            (ZkError::NoNode, Expect::Any, Step::Set) => steps[which] = Step::Create,
            // The bucket's directory is missing.
            (ZkError::NoNode, _, Step::Create) => ensure_parent(shared, &session, &dir).await?,
            // Another writer created it meanwhile: set it.
            (ZkError::NodeExists, Expect::Any, Step::Create) => steps[which] = Step::Set,
            (source, _, _) => return Err(unavailable("apply a batch", &source)),
        }
        if matches!(session.health(), SessionHealth::Ended) && !fence.is_empty() {
            return Err(gone(answer_lost, true));
        }
    }
    Err(BackendError::Unavailable(format!(
        "ZooKeeper did not take a key-value batch of bucket {bucket} in {} attempts",
        ATTEMPTS + writes.len()
    )))
}

/// The entry `key` of `bucket`, if any.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper failed or did not answer
/// within the session timeout.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn get(
    shared: &Arc<Shared>,
    bucket: &Bucket,
    key: &KvKey,
) -> Result<Option<KvEntry>, BackendError> {
    let path = entry_path(&directory(shared, bucket), key);
    let found = read_node(shared, &path, "a key-value call").await?;
    Ok(found.map(|(value, stat)| KvEntry {
        value,
        version: u64::try_from(stat.version).unwrap_or(0),
    }))
}

/// A page of `bucket`'s keys, sorted.
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn keys(
    shared: &Arc<Shared>,
    bucket: &Bucket,
    skip: u64,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let dir = directory(shared, bucket);
    let children = children_of(shared, &dir, "a key-value call").await?;
    let mut keys: Vec<String> = children
        .iter()
        .filter_map(|child| unescape(child))
        .collect();
    keys.sort();
    Ok(page(keys, skip, limit))
}

/// The fence is gone: `Lost`, unless an earlier attempt's answer was lost (it
/// may have committed while the fence stood). Without a fence, a session that
/// ended took only the answer with it.
fn gone(answer_lost: bool, fenced: bool) -> BackendError {
    if answer_lost || !fenced {
        BackendError::Unavailable(
            "the ZooKeeper session ended after a key-value write whose answer was lost: it may have committed"
                .into(),
        )
    } else {
        BackendError::Lost
    }
}

/// `call`, given up with `Unavailable` once the session timeout passed.
async fn bounded<T>(
    shared: &Arc<Shared>,
    call: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    bounded_call(shared, "a key-value call", call).await
}
