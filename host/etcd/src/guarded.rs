//! The guarded store on etcd ([`wardlock_backend::guarded`]): an entry of lock
//! `NAME`, key `K` is the key `<root>/%data/<NAME>/<K escaped>` (see
//! [`data_prefix`]), holding the writer's fencing token beside the value.
//!
//! A write is one transaction that compares the create revision of the host's
//! key covering the writer's grant (`<root>/<NAME>/<lease hex>`) with the one
//! it was granted under: the key exists under that create revision exactly
//! while the host's turn stands, since etcd deletes it with the lease (a host
//! paused past its lease) and a new turn is a new key with a greater create
//! revision. A stale writer's transaction therefore fails as a whole, however
//! late it arrives: nothing is written, and the writer is told `Lost`.
//!
//! The room lies under the root (`%` never occurs in a lock name, so no lock's
//! prefix covers it, as with `%sem` and `%revoke`): a role granted the root's
//! prefix, as `docs/security.md` sets one up, may use it, and `etcdctl lock`,
//! `contenders` and `wardlock status` never see an entry. Entries belong to no
//! lease: they outlive their writers, as a store should.
//!
//! Under host-local hand-off the host's key covers every local grant of the
//! lock, so the transaction cannot tell one local holder from the next: that
//! the grant is still this session's, and its lease still live, is checked
//! here before the transaction leaves (a released grant is `UnknownGrant`, a
//! lease the host's clock judged over is `Lost`, without a round trip).

use std::collections::BTreeSet;

use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse, TxnResponse};

use super::Shared;
use super::errors::classify;
use super::layout::room_prefix;
use wardlock_backend::guarded::{
    MAX_LISTED_KEYS, decode_entry, encode_entry, escape, listed_keys, not_exclusive, unescape,
};
use wardlock_backend::handoff::LOCAL_BITS;
use wardlock_backend::liveness::SessionHealth;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GuardedEntry, GuardedKey};

/// The room of wardlock's own under the root that holds guarded entries.
const ROOM: &str = "data";

/// The key prefix of lock `name`'s guarded store:
/// `<root>/%data/<name escaped>/`. A lock name's escape is its `%sem` and
/// `%revoke` encoding (`/` as `%2F`; no other character of a name is
/// escaped), so a nested name is one segment and never lists its parent's.
pub(super) fn data_prefix(root: &str, name: &LockName) -> String {
    room_prefix(root, ROOM, name)
}

/// The key of entry `key` of lock `name`.
fn entry_key(root: &str, name: &LockName, key: &GuardedKey) -> String {
    format!("{}{}", data_prefix(root, name), escape(key.as_str()))
}

/// A grant of a session, as a guarded write sees it.
pub(super) enum Writer {
    /// An exclusive lock grant.
    Exclusive(Holder),
    /// Not an exclusive lock (a shared grant, a permit): what it is, for the
    /// error.
    Other(String),
}

impl Writer {
    /// The holder of an exclusive grant.
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] for a shared grant or a permit.
    pub(crate) fn exclusive(self) -> Result<Holder, BackendError> {
        match self {
            Writer::Exclusive(holder) => Ok(holder),
            Writer::Other(what) => Err(not_exclusive(&what)),
        }
    }
}

/// An exclusive lock grant, with what stands for it on etcd.
pub(super) struct Holder {
    pub name: LockName,
    /// The host's key that covers the grant (`LocalHeld::path`).
    pub key: String,
    /// The grant's fencing token: the key's create revision above
    /// [`LOCAL_BITS`] (see `handoff`), the local grant below.
    pub token: u64,
    /// The lease generation the key lives under.
    pub generation: u64,
}

impl Holder {
    /// The create revision the host's key was granted under.
    pub(super) fn create_revision(&self) -> i64 {
        i64::try_from(self.token >> LOCAL_BITS).unwrap_or(i64::MAX)
    }

    /// The transaction's condition: the host's key still exists under the
    /// create revision of this grant's turn.
    pub(super) fn stands(&self) -> Compare {
        Compare::create_revision(self.key.as_str(), CompareOp::Equal, self.create_revision())
    }
}

/// Writes `value` under `key` of the lock `holder` holds, if its turn still
/// stands on etcd: the write's revision (the transaction's).
///
/// # Errors
/// [`BackendError::Lost`] when the lease ended or the key no longer stands
/// (nothing was written); `Unavailable` when etcd failed or did not answer
/// within the connect timeout (the write may have committed, while the grant
/// stood); `Refused` when etcd refused this host.
///
/// # Cancellation safety
/// A dropped call may still commit once if its transaction already left, and
/// only while the host's key stood.
pub(super) async fn put(
    shared: &Shared,
    holder: &Holder,
    key: &GuardedKey,
    value: &[u8],
) -> Result<u64, BackendError> {
    let entry = entry_key(&shared.leases.config().root, &holder.name, key);
    let write = TxnOp::put(entry, encode_entry(holder.token, value), None);
    let answer = guarded_txn(shared, holder, write, "write a guarded entry").await?;
    Ok(answer
        .header()
        .and_then(|h| u64::try_from(h.revision()).ok())
        .unwrap_or(0))
}

/// Deletes `key` of the lock `holder` holds, if its turn still stands on
/// etcd: true when there was an entry.
///
/// # Errors
/// As [`put`].
///
/// # Cancellation safety
/// As [`put`].
pub(super) async fn delete(
    shared: &Shared,
    holder: &Holder,
    key: &GuardedKey,
) -> Result<bool, BackendError> {
    let entry = entry_key(&shared.leases.config().root, &holder.name, key);
    let remove = TxnOp::delete(entry, None);
    let answer = guarded_txn(shared, holder, remove, "delete a guarded entry").await?;
    let deleted = answer
        .op_responses()
        .iter()
        .any(|op| matches!(op, TxnOpResponse::Delete(d) if d.deleted() > 0));
    Ok(deleted)
}

/// Runs `op` in one transaction on condition that `holder`'s turn stands,
/// after checking locally that its lease is live.
async fn guarded_txn(
    shared: &Shared,
    holder: &Holder,
    op: TxnOp,
    what: &str,
) -> Result<TxnResponse, BackendError> {
    // A lease the host's clock judged over may still live on etcd (the
    // clock ends it early); its holders were told `lost`, so none writes.
    let live = shared
        .leases
        .lease_of(holder.generation)
        .is_some_and(|lease| lease.health() != SessionHealth::Ended);
    if !live {
        return Err(BackendError::Lost);
    }
    let mut client = shared.leases.client().await?;
    let txn = Txn::new().when([holder.stands()]).and_then([op]);
    let answer = answered(shared, what, client.txn(txn)).await?;
    if answer.succeeded() {
        Ok(answer)
    } else {
        Err(BackendError::Lost)
    }
}

/// The entry `key` of lock `name` (a linearizable read).
///
/// # Errors
/// `Unavailable` when etcd failed or did not answer within the connect
/// timeout, or the stored bytes are no entry; `Refused` when etcd refused
/// this host.
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn get(
    shared: &Shared,
    name: &LockName,
    key: &GuardedKey,
) -> Result<Option<GuardedEntry>, BackendError> {
    let entry = entry_key(&shared.leases.config().root, name, key);
    let mut client = shared.leases.client().await?;
    let answer = answered(shared, "read a guarded entry", client.get(entry, None)).await?;
    let Some(kv) = answer.kvs().first() else {
        return Ok(None);
    };
    let revision = u64::try_from(kv.mod_revision()).unwrap_or(0);
    decode_entry(kv.value(), revision).map(Some)
}

/// The keys of lock `name` starting with `prefix`: the first `limit` (and
/// [`MAX_LISTED_KEYS`]) in order, at one revision.
///
/// Escaping does not keep the order (`&` sorts after `%2F` escaped, before
/// `/` plain), so etcd's own order and limit cannot pick the first keys: the
/// range is read in pages, keys only, keeping the least `limit`.
///
/// # Errors
/// As [`get`].
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn keys(
    shared: &Shared,
    name: &LockName,
    prefix: &str,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let kept = usize::try_from(limit.min(MAX_LISTED_KEYS)).unwrap_or(usize::MAX);
    let store = data_prefix(&shared.leases.config().root, name);
    let start = format!("{store}{}", escape(prefix));
    let mut least = BTreeSet::new();
    scan_keys(shared, &store, start, "list guarded keys", |listed| {
        least.insert(listed);
        if least.len() > kept {
            least.pop_last();
        }
    })
    .await?;
    Ok(listed_keys(least, prefix, limit))
}

/// Every key from `start` on that starts with `start`, under the store
/// prefix `store`, unescaped and handed to `each`: the range read in pages
/// of keys only, at one revision. A key wardlock did not write (not
/// unescapable) is passed over. Escaping does not keep the order, so a
/// caller that wants the first keys sorts what it is handed.
///
/// # Errors
/// As [`get`] (`what` names the read).
///
/// # Cancellation safety
/// Cancel safe: it only reads.
pub(super) async fn scan_keys(
    shared: &Shared,
    store: &str,
    start: String,
    what: &str,
    mut each: impl FnMut(String),
) -> Result<(), BackendError> {
    let end = range_end(start.as_bytes());
    let mut client = shared.leases.client().await?;
    let mut from = start.into_bytes();
    let mut at_revision = 0;
    loop {
        let options = GetOptions::new()
            .with_range(end.clone())
            .with_keys_only()
            .with_limit(i64::from(MAX_LISTED_KEYS))
            .with_revision(at_revision);
        let read = client.get(from.clone(), Some(options));
        let page = answered(shared, what, read).await?;
        if at_revision == 0 {
            at_revision = page.header().map_or(0, |h| h.revision());
        }
        for kv in page.kvs() {
            let listed = std::str::from_utf8(kv.key())
                .ok()
                .and_then(|k| k.strip_prefix(store))
                .and_then(unescape);
            if let Some(listed) = listed {
                each(listed);
            }
        }
        match page.kvs().last() {
            Some(last) if page.more() => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => return Ok(()),
        }
    }
}

/// The end of the range of keys starting with `prefix` (etcd's prefix end:
/// the last byte below 0xff incremented, what follows it dropped; `\0`, every
/// key, for a prefix of 0xff bytes).
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The answer to `request` (`what` names it in errors), within the connect
/// timeout.
pub(super) async fn answered<T>(
    shared: &Shared,
    what: &str,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, BackendError> {
    let limit = shared.leases.config().connect_timeout;
    match tokio::time::timeout(limit, request).await {
        Ok(answer) => answer.map_err(|e| classify(&e, what)),
        Err(_) => Err(BackendError::Unavailable(format!(
            "etcd did not answer within {limit:?} (to {what})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_live_in_a_room_no_lock_covers_one_segment_per_name() {
        let name = LockName::new("a/b").expect("valid");
        let key = GuardedKey::new("x/100%").expect("valid");
        let parent = data_prefix("/wardlock", &LockName::new("a").expect("valid"));
        let entry = entry_key("/wardlock", &name, &key);
        assert_eq!(entry, "/wardlock/%data/a%2Fb/x%2F100%25");
        assert!(!entry.starts_with(&parent), "{entry} under {parent}");
        assert!(!entry.starts_with(&super::super::layout::prefix("/wardlock", &name)));
        // The room's name encoding is the store's escape.
        assert_eq!(
            data_prefix("/wardlock", &name),
            format!("/wardlock/%data/{}/", escape(name.as_str()))
        );
    }

    #[test]
    fn a_range_end_follows_every_key_with_the_prefix() {
        assert_eq!(range_end(b"/r/%data/a/"), b"/r/%data/a0".to_vec());
        assert_eq!(range_end(b"a\xff"), b"b".to_vec());
        assert_eq!(range_end(b"\xff"), vec![0]);
    }
}
