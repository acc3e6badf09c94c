//! The guarded store on Valkey/Redis ([`wardlock_backend::guarded`]): a hash
//! per lock, `ROOT/%data/NAME`, field KEY, value `REVISION|ENTRY` (the entry
//! as the toolkit encodes it, with the writer's fencing token), revisions
//! from `ROOT/%revision`.
//!
//! A write is one script (`scripts::GUARDED_WRITE`) that commits only while
//! the writer's queue member holds: its session key exists and it heads its
//! lock's live queue. A member whose session the server ended (a host silent
//! past its session timeout) is dead, so a stale writer's script writes
//! nothing however late it arrives, and the writer is told `Lost`. Under
//! host-local hand-off the member covers every local grant of the host;
//! that the grant is still this session's is checked before the script
//! leaves.

use wardlock_backend::guarded::{decode_entry, encode_entry, listed_keys};
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GuardedEntry, GuardedKey};

use crate::Shared;
use crate::{scripts, stamped};

/// The exclusive grant a guarded write goes through.
pub(crate) struct Holder {
    pub(crate) name: LockName,
    /// The host's member that covers the grant.
    pub(crate) member: String,
    pub(crate) token: u64,
    pub(crate) generation: u64,
}

/// The entry `key` of `name`'s store.
///
/// # Errors
/// `Unavailable` when the server failed.
pub(crate) async fn get(
    shared: &Shared,
    name: &LockName,
    key: &GuardedKey,
) -> Result<Option<GuardedEntry>, BackendError> {
    let data = shared.layout.data_key(name);
    match stamped::read(shared, &data, key.as_str(), "the guarded store").await? {
        Some((revision, entry)) => decode_entry(&entry, revision).map(Some),
        None => Ok(None),
    }
}

/// Writes (`value`) or deletes (`None`) `key` through `holder`: the put's
/// revision, or 1/0 for a delete that found an entry or none.
///
/// # Errors
/// `Lost` when the holder's member no longer holds (nothing written);
/// `Unavailable` when the server failed (the write may have committed).
pub(crate) async fn write(
    shared: &Shared,
    holder: &Holder,
    key: &GuardedKey,
    value: Option<&[u8]>,
) -> Result<u64, BackendError> {
    let session = shared.vouched(holder.generation)?;
    let link = shared.server.link().await?;
    if !session.lives_on(&link) {
        return Err(BackendError::Lost);
    }
    let (op, stored) = match value {
        Some(value) => ("put", encode_entry(holder.token, value)),
        None => ("del", Vec::new()),
    };
    let answer: i64 = shared
        .server
        .invoke(
            &link,
            scripts::GUARDED_WRITE
                .key(shared.layout.queue_key(&holder.name))
                .key(shared.layout.data_key(&holder.name))
                .key(shared.layout.revision_key())
                .arg(shared.layout.root())
                .arg(&holder.member)
                .arg(key.as_str())
                .arg(op)
                .arg(stored),
            "write the guarded store",
        )
        .await?;
    match answer {
        -1 => Err(BackendError::Lost),
        done => Ok(u64::try_from(done).unwrap_or(0)),
    }
}

/// The keys of `name`'s store starting with `prefix`, sorted, at most
/// `limit`.
///
/// # Errors
/// `Unavailable` when the server failed.
pub(crate) async fn keys(
    shared: &Shared,
    name: &LockName,
    prefix: &str,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let link = shared.server.link().await?;
    let all: Vec<String> = shared
        .server
        .query(
            &link,
            redis::cmd("HKEYS").arg(shared.layout.data_key(name)),
            "list the guarded store",
        )
        .await?;
    Ok(listed_keys(all, prefix, limit))
}
