//! The standard `wasi:keyvalue` on Valkey/Redis
//! ([`wardlock_backend::keyvalue`]): a hash per bucket, `ROOT/%kv/BUCKET`,
//! field KEY, value `VERSION|VALUE`, versions from `ROOT/%kvversion`, so a
//! version changes with every write of its key. A batch is one Lua script
//! (`scripts::KV_WRITE`): it checks every declared lock's member (alive, at
//! the head of its queue) and every write's expectation, then writes, or
//! writes nothing.

use redis::Value;
use wardlock_backend::BackendError;
use wardlock_backend::keyvalue::{Bucket, Expect, KvCommit, KvEntry, KvKey, KvWrite, page};

use crate::Shared;
use crate::guarded::Holder;
use crate::link::text;
use crate::{scripts, stamped};

/// The entry `key` of `bucket`.
///
/// # Errors
/// `Unavailable` when the server failed.
pub(crate) async fn get(
    shared: &Shared,
    bucket: &Bucket,
    key: &KvKey,
) -> Result<Option<KvEntry>, BackendError> {
    let hash = shared.layout.kv_key(bucket.as_str());
    let read = stamped::read(shared, &hash, key.as_str(), "a key-value entry").await?;
    Ok(read.map(|(version, value)| KvEntry { value, version }))
}

/// `writes` to `bucket`, whole or not at all, while every holder of
/// `fence` holds.
///
/// # Errors
/// `Lost` when a fence member no longer holds (nothing written);
/// `Unavailable` when the server failed (the batch may have committed).
pub(crate) async fn write(
    shared: &Shared,
    bucket: &Bucket,
    writes: &[KvWrite],
    fence: &[Holder],
) -> Result<KvCommit, BackendError> {
    let link = shared.server.link().await?;
    for holder in fence {
        if !shared.vouched(holder.generation)?.lives_on(&link) {
            return Err(BackendError::Lost);
        }
    }
    let mut invocation = scripts::KV_WRITE.prepare_invoke();
    invocation
        .key(shared.layout.kv_key(bucket.as_str()))
        .key(shared.layout.kv_version_key())
        .arg(shared.layout.root())
        .arg(fence.len());
    for holder in fence {
        invocation
            .arg(shared.layout.queue_key(&holder.name))
            .arg(&holder.member);
    }
    invocation.arg(writes.len());
    for write in writes {
        let (expect, version) = match write.expect {
            Expect::Any => ("any", 0),
            Expect::Absent => ("absent", 0),
            Expect::Version(version) => ("version", version),
        };
        invocation
            .arg(if write.value.is_some() { "put" } else { "del" })
            .arg(write.key.as_str())
            .arg(expect)
            .arg(version)
            .arg(write.value.as_deref().unwrap_or_default());
    }
    let answer: Vec<Value> = shared
        .server
        .invoke(&link, &invocation, "write key-value entries")
        .await?;
    match answer.as_slice() {
        [what] if text(what) == "committed" => Ok(KvCommit::Committed),
        [what] if text(what) == "lost" => Err(BackendError::Lost),
        [what, key] if text(what) == "conflict" => Ok(KvCommit::Conflict(KvKey::new(&text(key))?)),
        _ => Err(BackendError::Unavailable(
            "Valkey/Redis answered a key-value batch in a form wardlock does not know".into(),
        )),
    }
}

/// The keys of `bucket`, sorted, without the first `skip`, at most `limit`.
///
/// # Errors
/// `Unavailable` when the server failed.
pub(crate) async fn keys(
    shared: &Shared,
    bucket: &Bucket,
    skip: u64,
    limit: u32,
) -> Result<Vec<String>, BackendError> {
    let link = shared.server.link().await?;
    let mut all: Vec<String> = shared
        .server
        .query(
            &link,
            redis::cmd("HKEYS").arg(shared.layout.kv_key(bucket.as_str())),
            "list key-value keys",
        )
        .await?;
    all.sort();
    Ok(page(all, skip, limit))
}
