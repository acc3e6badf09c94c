//! The key-value store: buckets of keys that every host of a lock service
//! sees, for guests written against the standard `wasi:keyvalue` rather
//! than `wardlock:lock` (the host serves that interface from here).
//!
//! Writes are conditional twice over, both checked in the one atomic
//! operation that writes (ZooKeeper: a `multi`; memory: under its lock
//! table):
//! - on each key's *version* ([`Expect`]), which is how `increment` and
//!   `cas` are atomic per key without any lock;
//! - on a *fence*: the exclusive grants the writer holds (an instance's
//!   declared locks). The write commits only while every one of them still
//!   stands on the lock service, so a writer paused past its session cannot
//!   overwrite the next holder's work.
//!
//! A batch ([`KeyValue::kv_write`] with several writes) commits whole or not
//! at all. The entries live apart from every lock's queue (ZooKeeper:
//! `<root>/%kv/<bucket>/<escaped key>`), so no lock recipe ever sees them.

use super::{BackendError, GrantId, Result};

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = crate::guarded::MAX_KEY_BYTES;

/// The largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = crate::guarded::MAX_VALUE_BYTES;

/// The most keys one batch reads or writes (ZooKeeper's `multi` and etcd's
/// transactions stay well inside their own limits with the fence's checks).
pub const MAX_BATCH_KEYS: usize = 64;

/// The most keys one page of a listing returns.
pub const MAX_LISTED_KEYS: u32 = 1000;

/// The longest bucket name, in bytes.
pub const MAX_BUCKET_BYTES: usize = 64;

/// The bucket every guest may open when the operator names none.
pub const DEFAULT_BUCKET: &str = "default";

/// A validated bucket name: 1..=[`MAX_BUCKET_BYTES`] bytes of ASCII letters,
/// digits, `-`, `_` and `.`, not starting with `.` (one path segment on
/// every engine, no escaping needed).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bucket(String);

impl Bucket {
    /// Validates `name`.
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] naming the bucket and the rule it
    /// breaks.
    pub fn new(name: &str) -> Result<Bucket> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty() || name.len() > MAX_BUCKET_BYTES {
            return Err(BackendError::InvalidRequest(format!(
                "bucket name {name:?} is {} bytes long; a bucket name is 1 to {MAX_BUCKET_BYTES} bytes",
                name.len()
            )));
        }
        if name.starts_with('.') || !name.chars().all(allowed) {
            return Err(BackendError::InvalidRequest(format!(
                "bucket name {name:?} may hold only ASCII letters, digits, '-', '_' and '.', and may not start with '.'"
            )));
        }
        Ok(Bucket(name.to_owned()))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Bucket {
    /// [`DEFAULT_BUCKET`].
    fn default() -> Self {
        Bucket(DEFAULT_BUCKET.to_owned())
    }
}

impl std::fmt::Display for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated key: 1..=[`MAX_KEY_BYTES`] bytes of UTF-8 without control
/// characters (engines escape the rest, [`crate::guarded::escape`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KvKey(String);

impl KvKey {
    /// Validates `key`.
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] for an empty key or one with a
    /// control character; [`BackendError::LimitExceeded`] for one longer
    /// than [`MAX_KEY_BYTES`].
    pub fn new(key: &str) -> Result<KvKey> {
        crate::guarded::check_key("key", key)?;
        Ok(KvKey(key.to_owned()))
    }

    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for KvKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Refuses a value larger than [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`BackendError::LimitExceeded`] naming the key, the size and the limit.
pub fn check_value(key: &KvKey, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(BackendError::LimitExceeded(format!(
            "the value for key {:?} is {} bytes long; at most {MAX_VALUE_BYTES} are allowed",
            key.as_str(),
            value.len()
        )));
    }
    Ok(())
}

/// Refuses a batch of more than [`MAX_BATCH_KEYS`] keys.
///
/// # Errors
/// [`BackendError::LimitExceeded`] naming the count and the limit.
pub fn check_batch(keys: usize) -> Result<()> {
    if keys > MAX_BATCH_KEYS {
        return Err(BackendError::LimitExceeded(format!(
            "a batch of {keys} keys; at most {MAX_BATCH_KEYS} are allowed in one call"
        )));
    }
    Ok(())
}

/// One entry, as [`KeyValue::kv_get`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvEntry {
    /// The value as written.
    pub value: Vec<u8>,
    /// The entry's version on the engine (ZooKeeper: the node's `version`;
    /// memory: a counter of the backend's writes): changes with every write
    /// of the key, and is what [`Expect::Version`] compares.
    pub version: u64,
}

/// What a write expects of its key's entry before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Anything: a plain write.
    Any,
    /// No entry.
    Absent,
    /// The entry at this version ([`KvEntry::version`]).
    Version(u64),
}

/// One write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvWrite {
    /// The key written.
    pub key: KvKey,
    /// The new value; `None` deletes the entry (a missing entry is no error).
    pub value: Option<Vec<u8>>,
    /// What the entry must be for the write to commit.
    pub expect: Expect,
}

impl KvWrite {
    /// A plain write of `value` under `key`.
    pub fn put(key: KvKey, value: Vec<u8>) -> KvWrite {
        KvWrite {
            key,
            value: Some(value),
            expect: Expect::Any,
        }
    }

    /// A plain delete of `key`.
    pub fn delete(key: KvKey) -> KvWrite {
        KvWrite {
            key,
            value: None,
            expect: Expect::Any,
        }
    }
}

/// What a batch of writes came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvCommit {
    /// Every write committed.
    Committed,
    /// Nothing was written: this key's entry was not what its write
    /// expected.
    Conflict(KvKey),
}

/// The key-value store of a [`LockSession`](crate::LockSession), reached
/// with [`LockSession::key_value`](crate::LockSession::key_value).
#[async_trait::async_trait]
pub trait KeyValue: Send + Sync {
    /// The entry `key` of `bucket`, if any: a snapshot that may be out of
    /// date as soon as it is returned.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed or did not
    /// answer.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Result<Option<KvEntry>>;

    /// Applies `writes` (at most [`MAX_BATCH_KEYS`], each key once) to
    /// `bucket` in one atomic operation on the engine: all of them commit,
    /// or none. It commits only if every write's [`Expect`] holds and every
    /// grant of `fence` (exclusive grants of this session) still stands on
    /// the lock service; an empty fence writes plainly.
    ///
    /// # Errors
    /// [`BackendError::Lost`] when a grant of `fence` no longer stands
    /// (nothing written); [`BackendError::UnknownGrant`] for a grant this
    /// session does not hold; [`BackendError::InvalidRequest`] for a shared
    /// grant or permit in `fence`, or a key written twice;
    /// [`BackendError::LimitExceeded`] for too many writes or a value too
    /// large; [`BackendError::Unavailable`] when the lock service failed or
    /// did not answer (the batch may or may not have committed, as with any
    /// write whose answer is lost).
    ///
    /// # Cancellation safety
    /// A dropped call may still commit once, whole, if its request already
    /// left: and then only while the fence stood.
    async fn kv_write(
        &self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[GrantId],
    ) -> Result<KvCommit>;

    /// The keys of `bucket` in sorted order, skipping the first `skip`, at
    /// most `limit` (and [`MAX_LISTED_KEYS`]).
    ///
    /// # Errors
    /// As [`KeyValue::kv_get`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Result<Vec<String>>;
}

/// Refuses a batch that is too large, writes a key twice or has a value too
/// large, before anything reaches the engine.
///
/// # Errors
/// [`BackendError::LimitExceeded`] or [`BackendError::InvalidRequest`]
/// naming what is wrong.
pub fn check_writes(writes: &[KvWrite]) -> Result<()> {
    check_batch(writes.len())?;
    let mut seen = std::collections::HashSet::with_capacity(writes.len());
    for write in writes {
        if !seen.insert(&write.key) {
            return Err(BackendError::InvalidRequest(format!(
                "key {:?} is written twice in one batch",
                write.key.as_str()
            )));
        }
        if let Some(value) = &write.value {
            check_value(&write.key, value)?;
        }
    }
    Ok(())
}

/// What an engine's [`KeyValue::kv_write`] starts with: `writes` checked
/// ([`check_writes`]) and each grant of `fence` turned into what the engine
/// checks on the server (`stands`: its node, key or connection, or why the
/// grant cannot fence: released, shared, a permit).
///
/// # Errors
/// The first refusal, of the writes or of a grant.
pub fn fence_for<T>(
    writes: &[KvWrite],
    fence: &[GrantId],
    stands: impl FnMut(GrantId) -> Result<T>,
) -> Result<Vec<T>> {
    check_writes(writes)?;
    fence.iter().copied().map(stands).collect()
}

/// `keys` (sorted) without the first `skip`, at most `limit` (and
/// [`MAX_LISTED_KEYS`]).
pub fn page(keys: impl IntoIterator<Item = String>, skip: u64, limit: u32) -> Vec<String> {
    let skip = usize::try_from(skip).unwrap_or(usize::MAX);
    let limit = usize::try_from(limit.min(MAX_LISTED_KEYS)).unwrap_or(usize::MAX);
    keys.into_iter().skip(skip).take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_one_plain_segment() {
        assert!(Bucket::new("default").is_ok());
        assert!(Bucket::new("orders-2026_v1.x").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "ünï", &"b".repeat(65)] {
            let why = Bucket::new(bad).expect_err(bad).to_string();
            assert!(why.contains("bucket name"), "{why}");
        }
    }

    #[test]
    fn keys_and_values_are_refused_with_the_limit() {
        assert!(KvKey::new("orders/42").is_ok());
        let long = KvKey::new(&"k".repeat(MAX_KEY_BYTES + 1)).expect_err("long");
        assert!(matches!(long, BackendError::LimitExceeded(ref why) if why.contains("512")));
        assert!(matches!(
            KvKey::new(""),
            Err(BackendError::InvalidRequest(_))
        ));
        let key = KvKey::new("k").expect("key");
        assert!(check_value(&key, &vec![0; MAX_VALUE_BYTES]).is_ok());
        let big = check_value(&key, &vec![0; MAX_VALUE_BYTES + 1]).expect_err("big");
        assert!(big.to_string().contains("65536"), "{big}");
    }

    #[test]
    fn a_batch_is_bounded_and_writes_each_key_once() {
        let write = |i: usize| KvWrite::put(KvKey::new(&format!("k{i}")).expect("key"), vec![]);
        let full: Vec<KvWrite> = (0..MAX_BATCH_KEYS).map(write).collect();
        assert!(check_writes(&full).is_ok());
        let over: Vec<KvWrite> = (0..=MAX_BATCH_KEYS).map(write).collect();
        assert!(matches!(
            check_writes(&over),
            Err(BackendError::LimitExceeded(_))
        ));
        let twice = [write(1), write(1)];
        let why = check_writes(&twice).expect_err("twice").to_string();
        assert!(why.contains("written twice"), "{why}");
    }

    #[test]
    fn pages_skip_and_bound() {
        let keys = || ["a", "b", "c"].map(String::from);
        assert_eq!(page(keys(), 1, 10), ["b", "c"]);
        assert_eq!(page(keys(), 0, 2), ["a", "b"]);
        assert!(page(keys(), u64::MAX, 10).is_empty());
    }
}
