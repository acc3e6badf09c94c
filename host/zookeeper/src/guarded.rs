//! The guarded store on ZooKeeper ([`wardlock_backend::guarded`]): one
//! persistent node per entry, `<data root>/<escaped name>/<escaped key>`,
//! written by one `multi` whose first operation checks that the holder's lock
//! node still exists. The node is ephemeral to the ZooKeeper session the
//! grant was made in, so a holder whose session expired (while its process
//! was paused, say) finds the check failing and the write refused by the
//! server itself, whatever its own clock believed.
//!
//! Entries live in a room of the lock root, `<root>/%data/` (as on etcd):
//! no lock name contains `%`, so the room is outside every lock's queue and
//! Curator, kazoo, `contenders` and `wardlock status` never see an entry. A
//! name's directory goes with its last entry.

use std::sync::Arc;

use tokio::time::Instant;
use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError, MultiWriteResult, Stat};

use super::Shared;
use super::connection::ZkSession;
use super::recipe::connect;
use crate::connection::retry;
use crate::recipe::create::ensure_parent;
use wardlock_backend::guarded::{decode_entry, encode_entry, escape, listed_keys, unescape};
use wardlock_backend::handoff::{SessionHealth, until};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GuardedEntry, GuardedKey};

/// Attempts of one write before giving up (each a round trip; the common
/// write takes one, a first write to a key two or three).
const ATTEMPTS: usize = 6;

/// The grant a write is guarded by: the lock node that must still exist, in
/// the ZooKeeper session it was made in, and the token the entry records.
pub(super) struct Holder {
    pub path: String,
    pub generation: u64,
    pub token: u64,
}

/// What a write does to the entry's node.
enum Write<'a> {
    /// Set its data, or create it with that data.
    Put(&'a [u8]),
    /// Delete it.
    Delete,
}

/// The directory of lock `name`'s entries: `<root>/%data/<escaped name>`.
/// No lock name contains `%`, so the room is never a lock's queue (etcd
/// keeps its entries under the same `<root>/%data/`).
fn directory(shared: &Shared, name: &LockName) -> String {
    let root = shared.connection.config().root.trim_end_matches('/');
    format!("{root}/%data/{}", escape(name.as_str()))
}

/// Writes `value` under `key` of `name` while `holder` stands: the write's
/// `mzxid`.
///
/// # Errors
/// [`BackendError::Lost`] when the holder's node is gone or its session
/// ended (nothing written); [`BackendError::Unavailable`] when ZooKeeper
/// failed or did not answer within the session timeout, or an earlier
/// attempt's answer was lost before the holder went (it may have committed).
///
/// # Cancellation safety
/// A dropped call may still commit once, if its request already left: the
/// server applies it only while the holder's node exists.
pub(super) async fn put(
    shared: &Arc<Shared>,
    name: &LockName,
    holder: &Holder,
    key: &GuardedKey,
    value: &[u8],
) -> Result<u64, BackendError> {
    let stored = encode_entry(holder.token, value);
    match bounded(
        shared,
        write(shared, name, holder, key, Write::Put(&stored)),
    )
    .await?
    {
        Written::Revision(revision) => Ok(revision),
        Written::Deleted(_) => Err(BackendError::Unavailable(
            "ZooKeeper answered a guarded put as a delete".into(),
        )),
    }
}

/// Deletes `key` of `name` while `holder` stands: true when it existed.
///
/// # Errors
/// As [`put`].
///
/// # Cancellation safety
/// As [`put`].
pub(super) async fn delete(
    shared: &Arc<Shared>,
    name: &LockName,
    holder: &Holder,
    key: &GuardedKey,
) -> Result<bool, BackendError> {
    match bounded(shared, write(shared, name, holder, key, Write::Delete)).await? {
        Written::Deleted(existed) => Ok(existed),
        Written::Revision(_) => Err(BackendError::Unavailable(
            "ZooKeeper answered a guarded delete as a put".into(),
        )),
    }
}

/// What a committed write did.
enum Written {
    Revision(u64),
    Deleted(bool),
}

/// One guarded write, retried on the holder's session while its answer was
/// lost or a missing directory or node changes which operation it needs.
async fn write(
    shared: &Arc<Shared>,
    name: &LockName,
    holder: &Holder,
    key: &GuardedKey,
    write: Write<'_>,
) -> Result<Written, BackendError> {
    let session = holder_session(shared, holder)?;
    let dir = directory(shared, name);
    let path = format!("{dir}/{}", escape(key.as_str()));
    let mut create = false;
    let mut answer_lost = false;
    for _ in 0..ATTEMPTS {
        let mut writer = session.client.new_multi_writer();
        writer
            .add_check_version(&holder.path, -1)
            .map_err(|e| unavailable("check the holder", &e))?;
        match write {
            Write::Put(stored) if create => writer
                .add_create(
                    &path,
                    stored,
                    &CreateMode::Persistent.with_acls(shared.acls()),
                )
                .map_err(|e| unavailable("create the entry", &e))?,
            Write::Put(stored) => writer
                .add_set_data(&path, stored, None)
                .map_err(|e| unavailable("write the entry", &e))?,
            Write::Delete => writer
                .add_delete(&path, None)
                .map_err(|e| unavailable("delete the entry", &e))?,
        }
        match writer.commit().await {
            Ok(results) => return committed(&session, &dir, &path, results).await,
            Err(MultiWriteError::OperationFailed { index: 0, .. }) => {
                return Err(gone(answer_lost));
            }
            Err(MultiWriteError::OperationFailed {
                source: ZkError::NoNode,
                ..
            }) => match write {
                Write::Delete => return Ok(Written::Deleted(false)),
                // A first write: create the node (and its directory).
                Write::Put(_) if !create => create = true,
                Write::Put(_) => ensure_parent(shared, &session, &dir).await?,
            },
            Err(MultiWriteError::OperationFailed {
                source: ZkError::NodeExists,
                ..
            }) => create = false,
            Err(MultiWriteError::OperationFailed { source, .. }) => {
                return Err(unavailable("write a guarded entry", &source));
            }
            Err(MultiWriteError::RequestFailed { source }) => {
                answer_lost |= matches!(source, ZkError::ConnectionLoss | ZkError::Timeout)
                    || matches!(source, ZkError::Custom(_));
                if !retry::after(&session, source).await? {
                    // The holder's session ended: its node with it.
                    return Err(gone(answer_lost));
                }
            }
        }
        if matches!(session.health(), SessionHealth::Ended) {
            return Err(gone(answer_lost));
        }
    }
    Err(BackendError::Unavailable(format!(
        "ZooKeeper did not take the guarded write of {path} in {ATTEMPTS} attempts"
    )))
}

/// What a committed multi did: the new revision, or whether a node was
/// deleted (and then its directory too, if that left it empty).
async fn committed(
    session: &ZkSession,
    dir: &str,
    path: &str,
    results: Vec<MultiWriteResult>,
) -> Result<Written, BackendError> {
    let stat = match results.into_iter().nth(1) {
        Some(MultiWriteResult::SetData { stat }) => Some(stat),
        Some(MultiWriteResult::Create { stat, .. }) if !stat.is_invalid() => Some(stat),
        Some(MultiWriteResult::Delete) => {
            // A directory left empty goes with its last entry; one another
            // holder's put refills meanwhile stays (NotEmpty), as it must.
            let _ = session.client.delete(dir, None).await;
            return Ok(Written::Deleted(true));
        }
        _ => None,
    };
    let stat = match stat {
        Some(stat) => stat,
        // ZOOKEEPER-4026: a multi's create may answer without a stat.
        None => match session.client.check_stat(path).await {
            Ok(Some(stat)) => stat,
            Ok(None) | Err(_) => {
                return Err(BackendError::Unavailable(format!(
                    "ZooKeeper wrote {path} but did not say its revision"
                )));
            }
        },
    };
    Ok(Written::Revision(u64::try_from(stat.mzxid).unwrap_or(0)))
}

/// The entry `key` of `name`, if any.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper failed or did not answer
/// within the session timeout.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn get(
    shared: &Arc<Shared>,
    name: &LockName,
    key: &GuardedKey,
) -> Result<Option<GuardedEntry>, BackendError> {
    let path = format!("{}/{}", directory(shared, name), escape(key.as_str()));
    let Some((stored, stat)) = read_node(shared, &path, "a guarded-store call").await? else {
        return Ok(None);
    };
    let revision = u64::try_from(stat.mzxid).unwrap_or(0);
    decode_entry(&stored, revision).map(Some)
}

/// The keys of `name` starting with `prefix`, sorted, at most `limit`.
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn keys(
    shared: &Arc<Shared>,
    name: &LockName,
    prefix: &str,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let dir = directory(shared, name);
    let children = children_of(shared, &dir, "a guarded-store call").await?;
    let keys = children.iter().filter_map(|child| unescape(child));
    Ok(listed_keys(keys, prefix, limit))
}

/// The data and stat of the node at `path` (`None` when there is none),
/// riding out connection losses, within the session timeout (`what` names
/// the call in the error): the read of the guarded and key-value stores.
///
/// # Errors
/// [`BackendError::Unavailable`] when ZooKeeper failed or did not answer.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn read_node(
    shared: &Arc<Shared>,
    path: &str,
    what: &str,
) -> Result<Option<(Vec<u8>, Stat)>, BackendError> {
    bounded_call(shared, what, async {
        loop {
            let session = connect(shared, None).await?;
            match session.client.get_data(path).await {
                Ok(found) => return Ok(Some(found)),
                Err(ZkError::NoNode) => return Ok(None),
                Err(error) => {
                    retry::after(&session, error).await?;
                }
            }
        }
    })
    .await
}

/// The children of `dir` (none when it is missing), as [`read_node`] reads.
///
/// # Errors
/// As [`read_node`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn children_of(
    shared: &Arc<Shared>,
    dir: &str,
    what: &str,
) -> Result<Vec<String>, BackendError> {
    bounded_call(shared, what, async {
        loop {
            let session = connect(shared, None).await?;
            match session.client.list_children(dir).await {
                Ok(children) => return Ok(children),
                Err(ZkError::NoNode) => return Ok(Vec::new()),
                Err(error) => {
                    retry::after(&session, error).await?;
                }
            }
        }
    })
    .await
}

/// The ZooKeeper session `holder` was granted in, while it is current and
/// not judged ended by the host's clock.
fn holder_session(shared: &Shared, holder: &Holder) -> Result<Arc<ZkSession>, BackendError> {
    standing_session(shared, holder.generation)
}

/// The ZooKeeper session of `generation`, while it is current and not judged
/// ended by the host's clock (`Lost` otherwise): what a fenced write goes
/// through.
pub(super) fn standing_session(
    shared: &Shared,
    generation: u64,
) -> Result<Arc<ZkSession>, BackendError> {
    let session = shared
        .connection
        .session_of(generation)
        .ok_or(BackendError::Lost)?;
    if matches!(session.health(), SessionHealth::Ended) {
        return Err(BackendError::Lost);
    }
    Ok(session)
}

/// The holder is gone: `Lost`, unless an earlier attempt's answer was lost
/// (it may have committed while the holder stood).
fn gone(answer_lost: bool) -> BackendError {
    if answer_lost {
        BackendError::Unavailable(
            "the lock was lost after a guarded write whose answer was lost: it may have committed"
                .into(),
        )
    } else {
        BackendError::Lost
    }
}

pub(super) fn unavailable(what: &str, error: &ZkError) -> BackendError {
    BackendError::Unavailable(format!("ZooKeeper could not {what}: {error}"))
}

/// `call`, given up with `Unavailable` once the session timeout passed.
async fn bounded<T>(
    shared: &Arc<Shared>,
    call: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    bounded_call(shared, "a guarded-store call", call).await
}

/// `call` (`what`, for the error), given up with `Unavailable` once the
/// session timeout passed.
pub(super) async fn bounded_call<T>(
    shared: &Arc<Shared>,
    what: &str,
    call: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    let deadline = Instant::now() + shared.connection.config().session_timeout;
    until(Some(deadline), call).await.unwrap_or_else(|_| {
        Err(BackendError::Unavailable(format!(
            "ZooKeeper did not answer {what} within the session timeout"
        )))
    })
}
